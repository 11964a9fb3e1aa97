"""The demo's local network: its work dir, chain, wallets, catalog and index, and the neuron processes.

Every neuron is its own process (``python -m neurons.cli miner|validator ...``) in its own
session, so a Ctrl-C in the terminal reaches only the demo, which then stops them in order
(terminate, kill after a grace period). Each process logs to a file under ``<workdir>/logs``.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from arena.catalog import write_products
from arena.index import build_index
from arena.synth import iter_synth_products
from arena.world.seed import world_round_at
from neurons.chain.local.records import CommitRecord
from neurons.chain.local.state import LocalChain, create_local_chain, read_commits
from neurons.chain.wallets import create_wallet, hotkey_of, register_wallet
from neurons.errors import NeuronError

logger = logging.getLogger(__name__)

NETUID = 1
VALIDATOR_STAKE = 1000.0
# Secrets a user may have exported for a real endpoint; every other ARENA_* variable of the
# caller is dropped, so that the demo's processes run on the demo's settings only.
PASSED_SECRETS = ("ARENA_LLM_API_KEY", "ARENA_JUDGE__API_KEY")


class DemoError(NeuronError):
    """The demo cannot go on: a neuron that died or did not start, a round that did not run, no export."""


class DemoInputError(DemoError):
    """Bad input: a work dir that is not fresh, an endpoint that does not answer, a bad count."""


@dataclass(frozen=True)
class Layout:
    """Where the demo keeps everything, under one work dir."""

    root: Path

    @property
    def chain(self) -> Path:
        """The local chain file every process shares."""
        return self.root / "chain.db"

    @property
    def wallets(self) -> Path:
        """The wallets (unencrypted, local only)."""
        return self.root / "wallets"

    @property
    def catalog(self) -> Path:
        """The catalog the index is built from."""
        return self.root / "catalog.jsonl"

    @property
    def data_dir(self) -> Path:
        """The validator's data dir: SQLite database, secret."""
        return self.root / "validator"

    @property
    def index(self) -> Path:
        """The search index."""
        return self.root / "index"

    @property
    def export(self) -> Path:
        """Where the validator's export job writes the curated data sets."""
        return self.root / "export"

    @property
    def logs(self) -> Path:
        """One log file per process."""
        return self.root / "logs"

    @property
    def database_url(self) -> str:
        """The SQLAlchemy URL of the validator's database."""
        return f"sqlite:///{self.data_dir / 'validator.db'}"


@dataclass(frozen=True)
class Member:
    """A registered neuron: wallet name, hotkey, uid."""

    name: str
    hotkey: str
    uid: int


def create_chain(
    layout: Layout, miner_names: Sequence[str], *, block_seconds: float = 1.0
) -> dict[str, Member]:
    """Create the local chain with an owner (uid 0), a validator (stake and permit) and the miners.

    The chain's rules are small so that a few rounds show weights: a tempo of 10 blocks and a
    weights rate limit of one block (the validator sets weights after every round). Commit-reveal
    is on, as on finney: each submission is a timelocked commit revealed about an epoch later.
    Every process runs on this host, so the miners' loopback axons are allowed.

    Returns:
        The validator and every miner by wallet name.
    """
    owner = create_wallet(layout.wallets, "owner")
    create_local_chain(
        layout.chain,
        NETUID,
        owner_hotkey=hotkey_of(owner),
        owner_coldkey=owner.coldkeypub.ss58_address,
        block_seconds=block_seconds,
        tempo=10,
        weights_rate_limit=1,
        loopback_axons=True,
    )
    members: dict[str, Member] = {}
    validator = create_wallet(layout.wallets, "validator")
    uid = register_wallet(layout.chain, validator, stake=VALIDATOR_STAKE, validator_permit=True)
    members["validator"] = Member("validator", hotkey_of(validator), uid)
    for name in miner_names:
        wallet = create_wallet(layout.wallets, name)
        members[name] = Member(name, hotkey_of(wallet), register_wallet(layout.chain, wallet))
    return members


def wait_for_reveals(chain: Path, *, timeout: float) -> CommitRecord | None:
    """Wait until the local chain has opened every weight commit; the newest one (None: no commit).

    Raises:
        DemoError: a commit is still sealed after ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        commits = read_commits(chain)
        if not any(commit.status == "pending" for commit in commits):
            return commits[-1] if commits else None
        if time.monotonic() > deadline:
            raise DemoError(f"a weight commit on {chain} is still sealed after {timeout:g} s")
        time.sleep(0.5)


def wait_for_next_world(chain: Path, *, period: int, delay: int, timeout: float) -> int:
    """Wait until the local chain makes the next world's seed block; that world's index.

    Raises:
        DemoError: no new world within ``timeout`` seconds.
    """
    local = LocalChain(chain)
    at = world_round_at(local.block(), period=period, delay=delay)
    target = 0 if at is None else at.index + 1
    deadline = time.monotonic() + timeout
    while (now := world_round_at(local.block(), period=period, delay=delay)) is None or now.index < target:
        if time.monotonic() > deadline:
            raise DemoError(f"the local chain {chain} made no new world within {timeout:g} s")
        time.sleep(0.25)
    return now.index


def prepare_catalog(layout: Layout, *, products: int, seed: int, catalog: Path | None = None) -> int:
    """Write the synthetic catalog (or take ``catalog``) and build the search index from it.

    Returns:
        The number of products indexed.
    """
    source = catalog
    if source is None:
        write_products(iter_synth_products(products, seed), layout.catalog)
        source = layout.catalog
    report = build_index([source], layout.index)
    return report.products


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def child_env(extra: Mapping[str, str]) -> dict[str, str]:
    """The caller's environment without its ``ARENA_*`` settings (API keys kept), plus ``extra``."""
    env = {
        key: value
        for key, value in os.environ.items()
        if (not key.startswith("ARENA_") or key in PASSED_SECRETS) and key != "PROMETHEUS_MULTIPROC_DIR"
    }
    env.update(extra)
    return env


def arena_command(*args: str) -> list[str]:
    """The ``arena`` command line run by this interpreter (works without the console script on PATH)."""
    return [sys.executable, "-m", "neurons.cli", *args]


@dataclass
class NeuronProcess:
    """A started neuron process, its port and its log file."""

    name: str
    popen: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def tail(self, chars: int = 3000) -> str:
        """The end of the process's log."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return text[-chars:]

    def wait_healthy(self, timeout: float = 60.0) -> None:
        """Block until ``GET /health`` answers 200.

        Raises:
            DemoError: the process exited or did not answer within ``timeout``.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                raise DemoError(f"{self.name} exited with code {self.popen.returncode}:\n{self.tail()}")
            try:
                if httpx.get(f"{self.base_url}/health", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass  # not listening yet
            time.sleep(0.2)
        raise DemoError(f"{self.name} did not answer /health within {timeout:.0f}s:\n{self.tail()}")

    def stop(self, grace: float = 10.0) -> None:
        """Terminate the process (its whole session), then kill it after ``grace`` seconds."""
        if self.popen.poll() is not None:
            return
        _signal_group(self.popen, signal.SIGTERM)
        try:
            self.popen.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            logger.warning("demo_stop process=%s escalation=kill", self.name)
            _signal_group(self.popen, signal.SIGKILL)
            self.popen.wait(timeout=grace)


def _signal_group(popen: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(popen.pid, sig)  # the process leads its own session (start_new_session)
    except ProcessLookupError:
        pass


@dataclass
class Processes:
    """Every process the demo started, stopped in reverse start order (validator before miners)."""

    log_dir: Path
    started: list[NeuronProcess] = field(default_factory=list)

    def start(
        self, name: str, args: Sequence[str], *, port: int, env: Mapping[str, str], stdout: Path | None = None
    ) -> NeuronProcess:
        """Start ``arena <args>`` with ``env`` added to a clean environment; output to ``logs/<name>.log``.

        Args:
            name: the process's name (and log file stem).
            args: the ``arena`` arguments.
            port: the port it listens on.
            env: ``ARENA_*`` settings for it.
            stdout: where standard output goes (a JSON report); None sends it to the log too.
        """
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_dir / f"{name}.log"
        with log.open("ab") as err, stdout.open("wb") if stdout else log.open("ab") as out:
            popen = subprocess.Popen(
                arena_command(*args),
                env=child_env(env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        process = NeuronProcess(name, popen, port, log)
        self.started.append(process)
        logger.info("demo_process_started name=%s pid=%d port=%d", name, popen.pid, port)
        return process

    def stop_all(self) -> None:
        """Stop every process still running, newest first."""
        for process in reversed(self.started):
            process.stop()
