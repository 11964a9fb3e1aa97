"""A local network of real processes on loopback: a local chain file, `arena miner`s and `arena validator`.

Used by the e2e tests and by the deploy checks (which scrape a running validator's /metrics).
Every process gets a clean environment (no stray ``ARENA_*`` from the caller) and logs to a file
under the network's directory, printed when something goes wrong.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from arena.catalog import write_products
from arena.synth import iter_synth_products
from neurons.chain.local.state import create_local_chain
from neurons.chain.wallets import Wallet, create_wallet, hotkey_of, register_wallet

ROOT = Path(__file__).resolve().parents[2]
ARENA = Path(sys.executable).parent / "arena"
NETUID = 3
CATALOG_PRODUCTS = 2000


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Process:
    """A started `arena` process with its port and log file."""

    name: str
    popen: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait_healthy(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                raise AssertionError(
                    f"{self.name} exited with {self.popen.returncode}:\n{self.output()[-5000:]}"
                )
            try:
                if httpx.get(f"{self.base}/health", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"{self.name} not healthy within {timeout}s:\n{self.output()[-5000:]}")

    def wait(self, timeout: float) -> int:
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"{self.name} still running after {timeout}s:\n{self.output()[-5000:]}"
            ) from None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(sig)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=10)


@dataclass
class LocalNetwork:
    """A local chain with an owner, a validator (stake, permit) and miners, and the processes run on it."""

    root: Path
    miners: tuple[str, ...] = ("miner-good", "miner-bad")
    block_seconds: float = 1.0
    wallets: dict[str, Wallet] = field(default_factory=dict)
    processes: list[Process] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.chain = self.root / "chain.db"
        self.wallets_dir = self.root / "wallets"
        self.catalog = self.root / "catalog.jsonl"
        self.data_dir = self.root / "validator"
        for name in ("owner", "validator", *self.miners):
            self.wallets[name] = create_wallet(self.wallets_dir, name)
        owner = self.wallets["owner"]
        create_local_chain(
            self.chain,
            NETUID,
            owner_hotkey=hotkey_of(owner),
            owner_coldkey=owner.coldkeypub.ss58_address,
            block_seconds=self.block_seconds,
            tempo=10,
            weights_rate_limit=2,
            loopback_axons=True,  # every process on this host: the local network is in use
        )
        self.uids = {"validator": register_wallet(self.chain, self.wallets["validator"], stake=1000.0,
                                                  validator_permit=True)}  # fmt: skip
        for name in self.miners:
            self.uids[name] = register_wallet(self.chain, self.wallets[name])
        write_products(iter_synth_products(CATALOG_PRODUCTS, 5), self.catalog)

    @property
    def db_url(self) -> str:
        return f"sqlite:///{self.data_dir / 'validator.db'}"

    def hotkey(self, name: str) -> str:
        return hotkey_of(self.wallets[name])

    def _env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("ARENA_") and k != "PROMETHEUS_MULTIPROC_DIR"
        }
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        env.update(extra or {})
        return env

    def _common(self, wallet: str) -> list[str]:
        return [
            "--network", "local", "--local-chain", str(self.chain), "--netuid", str(NETUID),
            "--wallet-name", wallet, "--wallet-path", str(self.wallets_dir),
        ]  # fmt: skip

    def _start(self, name: str, args: list[str], port: int, env: dict[str, str] | None) -> Process:
        log = self.root / f"{name}-{len(self.processes)}.log"
        with log.open("wb") as out:
            popen = subprocess.Popen(
                [str(ARENA), *args], cwd=self.root, env=self._env(env), stdout=out, stderr=subprocess.STDOUT
            )
        process = Process(name, popen, port, log)
        self.processes.append(process)
        return process

    def start_miner(self, name: str, agent: str, *, wait: bool = True) -> Process:
        port = free_port()
        args = ["miner", *self._common(name), "--agent", agent, "--host", "127.0.0.1", "--port", str(port)]
        process = self._start(name, args, port, {"ARENA_LOG_LEVEL": "INFO"})
        if wait:
            process.wait_healthy()
        return process

    def validator_env(self, **settings: Any) -> dict[str, str]:
        """Small, fast settings for the local network (``ARENA_*`` variables), overridable."""
        values: dict[str, Any] = {
            "DATA_DIR": self.data_dir,
            "CATALOG": self.catalog,
            "MIN_HELD_OUT": 12,
            "TASK_BATCH": 30,
            "TASKS_PER_ROUND": 3,
            "EPISODE_SECONDS": 20,
            "MAX_TOOL_CALLS": 20,
            "PRACTICE_SHARE": 0.1,
            "NEVER_TOUCH_SHARE": 0.0,
            "WEIGHTS_MIN_BLOCKS": 3,
            "ROUND_INTERVAL": 3600,
            "WEIGHTS_INTERVAL": 3600,
            "LOG_LEVEL": "INFO",
        }
        values.update({key.upper(): value for key, value in settings.items()})
        return {f"ARENA_{key}": str(value) for key, value in values.items()}

    def start_validator(
        self,
        *extra: str,
        port: int | None = None,
        wait: bool = True,
        env: dict[str, str] | None = None,
        **settings: Any,
    ) -> Process:
        port = port or free_port()
        args = ["validator", *self._common("validator"), "--host", "127.0.0.1", "--port", str(port), *extra]
        process = self._start("validator", args, port, {**self.validator_env(**settings), **(env or {})})
        if wait and "--once" not in extra:
            process.wait_healthy()
        return process

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()


def metric_value(base: str, name: str, **labels: str) -> float:
    """The sum of the samples called ``name`` (with at least ``labels``) that ``base``/metrics serves."""
    text = httpx.get(f"{base}/metrics", timeout=5.0).text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name and labels.items() <= sample.labels.items()
    )


def wait_for_rounds(validator: Process, rounds: int = 1, timeout: float = 90.0) -> None:
    """Block until the validator reports ``rounds`` completed rounds on /metrics."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if validator.popen.poll() is not None:
            raise AssertionError(f"validator exited:\n{validator.output()[-5000:]}")
        if metric_value(validator.base, "arena_rounds_total") >= rounds:
            return
        time.sleep(0.3)
    raise AssertionError(f"fewer than {rounds} rounds within {timeout}s:\n{validator.output()[-5000:]}")


def start_running_network(
    root: Path, env: dict[str, str] | None = None, **validator_settings: Any
) -> tuple[LocalNetwork, Process, list[Process]]:
    """A network with a solving and a failing miner and a validator running rounds back to back."""
    net = LocalNetwork(root)
    try:
        miners = [
            net.start_miner("miner-good", "scripted", wait=False),
            net.start_miner("miner-bad", "tests.e2e.agents:failing_agent", wait=False),
        ]
        for miner in miners:
            miner.wait_healthy()
        settings: dict[str, Any] = {"round_interval": 2, "rotation_interval": 5}
        settings.update(validator_settings)
        validator = net.start_validator(env=env, **settings)
    except BaseException:
        net.stop()
        raise
    return net, validator, miners
