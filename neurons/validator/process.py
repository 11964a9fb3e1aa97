"""The validator process: its app and scheduler served in one event loop, and ``main()``.

``main()`` reads the settings once, sets up logging, opens the chain, the database (migrated
only when asked, or for the embedded SQLite default; otherwise the schema must already be at
head), the search index (built from the catalog on first start) and the episode registry, and
serves one HTTP app (tool server, /health, /metrics) with uvicorn. The scheduler runs in the
same event loop: metagraph sync, round, weights, task rotation and the periodic export (the
curation funnel, ``curation_exporter``; ``serve`` without an exporter schedules none). One
process, one worker: the episode registry lives in memory. The components and their jobs are
``neurons.validator.components``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import uvicorn

from arena.tools import ToolContext
from arena.toolserver import create_tool_router
from neurons.errors import ChainUnavailable, LocalChainError
from neurons.process import run_neuron
from neurons.serving import uvicorn_options
from neurons.validator.app import create_validator_app
from neurons.validator.components import Exporter, Validator, curation_exporter, open_validator
from neurons.validator.scheduler import Scheduler, run_job
from neurons.validator.settings import ValidatorSettings
from neurons.validator.startup import (
    StartupError,
    init_metrics,
)
from storage.errors import StorageError

logger = logging.getLogger(__name__)

START_REFUSED = (StartupError, FileNotFoundError)  # exit 2: no index, schema, secret or hotkey file
STOPPED_BY = (ChainUnavailable, LocalChainError, StorageError)  # exit 1: the chain or database is away


# ---------------------------------------------------------------------------- running it


async def run_once(validator: Validator) -> dict[str, Any]:
    """One pass of the jobs, in order (rotation, round, weights, export), through the job wrapper.

    Returns:
        ``Validator.report`` with ``failed``: the jobs that raised.
    """
    failed = [job.name for job in validator.jobs() if job.name != "metagraph" and not await run_job(job)]
    return validator.report(failed)


async def serve(
    settings: ValidatorSettings, *, once: bool = False, exporter: Exporter | None = None
) -> dict[str, Any] | None:
    """Run the validator's app until stopped; with ``once``, one pass of the jobs then stop.

    The HTTP app serves in both cases: miners' agents call its tool server during rounds.
    """
    validator = open_validator(settings, exporter=exporter)
    init_metrics()
    await validator.warn_weight_limit()
    await validator.self_check()  # a failure is logged and exported; rounds wait until it passes
    scheduler = Scheduler(validator.jobs())

    async def startup() -> None:
        if not once:
            scheduler.start()

    app = create_validator_app(
        tool_router=create_tool_router(validator.registry, ToolContext(validator.index, settings.toolset)),
        gateway_router=validator.gateway.router() if validator.gateway is not None else None,
        health=validator.health,
        on_startup=startup,
        on_shutdown=scheduler.stop,
    )
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        lifespan="on",
        **uvicorn_options(settings.serving),  # slow-loris bounds on the public port (neurons.serving)
    )
    server = uvicorn.Server(config)
    logger.info(
        "validator_start network=%s netuid=%d port=%d hotkey=%s toolserver=%s once=%s",
        settings.network,
        settings.netuid,
        settings.port,
        validator.hotkey,
        settings.tool_server_url(),
        once,
    )
    try:
        if not once:
            await server.serve()
            return None
        serving = asyncio.create_task(server.serve())
        while not server.started:
            if serving.done():
                serving.result()
                raise StartupError(f"the HTTP server did not start on {settings.host}:{settings.port}")
            await asyncio.sleep(0.05)
        try:
            return await run_once(validator)
        finally:
            server.should_exit = True
            await serving
    finally:
        await validator.aclose()


def main(overrides: dict[str, Any] | None = None, *, once: bool = False, json_output: bool = False) -> None:
    """Run the validator: settings (``ARENA_*`` variables and ``.env``, then ``overrides``), logging, serve.

    Exits 2 on invalid settings or a missing wallet, index or schema; 1 when the chain or the
    database cannot be reached at start, or (with ``once``) when a job failed.
    """

    def run(settings: ValidatorSettings) -> dict[str, Any] | None:
        return asyncio.run(serve(settings, once=once, exporter=curation_exporter(settings)))

    outcome = run_neuron(
        "validator", ValidatorSettings, overrides, run, refused=START_REFUSED, stopped=STOPPED_BY
    )
    if outcome is not None:
        if json_output:
            print(json.dumps(outcome, sort_keys=True))
        if outcome["failed"]:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
