"""The miner process: settings, logging, the chain, its endpoint served on chain, and uvicorn running the app.

Run it as ``arena miner`` (see ``neurons/cli/miner.py``) or ``python -m neurons.miner.process`` (settings
from ``ARENA_*`` variables only). With several workers, uvicorn starts each one through
``worker_app`` (an app factory), which rebuilds the same settings from the parent's resolved copy.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import os
import tempfile
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI

from neurons import metrics
from neurons.chain.client import open_neuron_chain
from neurons.chain.signing import make_nonce_store
from neurons.errors import ChainUnavailable, EndpointRefused, LocalChainError
from neurons.logs import setup_logging
from neurons.miner.agents.contract import AgentError
from neurons.miner.agents.loading import load_agent
from neurons.miner.app import create_miner_app
from neurons.miner.settings import MinerSettings
from neurons.process import run_neuron
from neurons.protocol import PROTOCOL_VERSION
from neurons.serving import uvicorn_options

logger = logging.getLogger(__name__)

WORKER_SETTINGS_ENV = "ARENA_MINER_WORKER_SETTINGS"  # the parent's resolved settings, for workers
START_REFUSED = (AgentError, FileNotFoundError)  # exit 2: a bad agent spec, no hotkey file
STOPPED_BY = (ChainUnavailable, LocalChainError, EndpointRefused)  # exit 1: the chain refused or is away


def build_app(settings: MinerSettings) -> FastAPI:
    """The miner app for ``settings``: its own chain client, agent and replay store.

    Raises:
        AgentError: the agent spec cannot be loaded.
        FileNotFoundError: the wallet's hotkey is missing.
        LocalChainError: the local chain file is missing or of another subnet.
    """
    metrics.BUILD_INFO.labels(package_version("shopping-arena"), "miner", str(PROTOCOL_VERSION)).set(1)
    chain = open_neuron_chain(settings)
    agent = load_agent(settings.agent, **settings.agent_options())
    # The store must remember nonces at least as long as they are fresh (max_age + 2 s of skew).
    nonce_store = make_nonce_store(settings.nonce_db, retention=max(60.0, settings.app.auth_max_age + 5.0))
    return create_miner_app(
        wallet=chain.wallet,
        agent=agent,
        metagraph=chain.snapshot,
        nonce_store=nonce_store,
        config=settings.app,
        on_shutdown=chain.close,
    )


def worker_app() -> FastAPI:
    """Uvicorn app factory for worker processes: settings from the parent, then ``build_app``."""
    settings = MinerSettings.model_validate(json.loads(os.environ[WORKER_SETTINGS_ENV]))
    setup_logging(settings.log_level)
    return build_app(settings)


def unreachable_ip_warning(settings: MinerSettings) -> str | None:
    """Why validators will not query the advertised IP, or None when they will.

    Validators on finney and test query global addresses only: a private or loopback one would
    aim their episode tokens at their own networks.
    """
    ip = settings.advertised_ip()
    if settings.network not in ("finney", "test") or ip is None or ipaddress.ip_address(ip).is_global:
        return None
    return f"{ip} is not a global address: validators on {settings.network} will not query this miner"


async def serve_endpoint(settings: MinerSettings) -> None:
    """Advertise ``advertised_ip():port`` on chain (a no-op when already served there).

    Raises:
        EndpointRefused: the chain refused (e.g. the hotkey is not registered).
        ChainUnavailable: the chain could not be reached.
    """
    ip = settings.advertised_ip()
    if ip is None:  # refused by MinerSettings validation already
        raise EndpointRefused("no IP to advertise")
    if (warning := unreachable_ip_warning(settings)) is not None:
        logger.warning("endpoint_not_global %s; set --external-ip to a public IP", warning)
    chain = open_neuron_chain(settings)
    try:
        submission = await chain.serve(ip, settings.port)
    finally:
        await chain.close()
    if not submission.success:
        raise EndpointRefused(f"serving {ip}:{settings.port} refused: {submission.code} {submission.message}")
    logger.info("endpoint_served ip=%s port=%d block=%s", ip, settings.port, submission.block)


def _prepare_workers(settings: MinerSettings) -> MinerSettings:
    """Give several workers a shared replay store and metrics directory, and their settings."""
    if settings.nonce_db is None:
        path = Path(tempfile.gettempdir()) / f"arena-miner-{settings.port}-nonces.db"
        settings = settings.model_copy(update={"nonce_db": path})
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="arena-miner-metrics-")
    os.environ[WORKER_SETTINGS_ENV] = json.dumps(settings.revealed())
    return settings


def run(settings: MinerSettings) -> None:
    """Serve the endpoint on chain, then run uvicorn until stopped (blocks)."""
    if settings.serve_on_chain:
        asyncio.run(serve_endpoint(settings))
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "log_config": None,
        **uvicorn_options(settings.serving),  # slow-loris bounds on the public port (neurons.serving)
    }
    logger.info(
        "miner_start network=%s netuid=%d port=%d workers=%d agent=%s",
        settings.network,
        settings.netuid,
        settings.port,
        settings.workers,
        settings.agent,
    )
    if settings.workers == 1:
        uvicorn.run(build_app(settings), **options)
        return
    settings = _prepare_workers(settings)
    uvicorn.run("neurons.miner.process:worker_app", factory=True, workers=settings.workers, **options)


def main(overrides: dict[str, Any] | None = None) -> None:
    """Run the miner: settings (``ARENA_*`` variables, then ``overrides``), logging, chain, HTTP.

    Exits 2 on invalid settings or agent spec, 1 when the chain refuses or cannot be reached.
    """
    run_neuron("miner", MinerSettings, overrides, run, refused=START_REFUSED, stopped=STOPPED_BY)


if __name__ == "__main__":
    main()
