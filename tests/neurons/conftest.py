"""A small local network for chain tests: wallets, a local chain file, a fake clock; a clean environment."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from neurons.chain.client import BittensorChain, open_chain
from neurons.chain.local.state import create_local_chain
from neurons.chain.wallets import Wallet, create_wallet, hotkey_of, register_wallet

NETUID = 11


@dataclass
class FakeClock:
    """Wall time that only moves when a test says so."""

    now: float = field(default_factory=time.time)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class LocalNet:
    """A local chain file with an owner, a validator (uid 1) and two miners (uids 2, 3)."""

    path: Path
    wallets_dir: Path
    clock: FakeClock
    wallets: dict[str, Wallet] = field(default_factory=dict)

    def hotkey(self, name: str) -> str:
        return hotkey_of(self.wallets[name])

    def chain(self, name: str, **options: Any) -> BittensorChain:
        return open_chain(
            "local",
            NETUID,
            wallet_name=name,
            wallet_hotkey="default",
            wallet_path=self.wallets_dir,
            local_chain_path=self.path,
            clock=self.clock,
            **options,
        )


@pytest.fixture(scope="session")
def wallets_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Key generation is cheap but not free; the same keys serve every test.
    directory = tmp_path_factory.mktemp("wallets")
    for name in ("owner", "validator", "miner1", "miner2", "stranger"):
        create_wallet(directory, name)
    return directory


@pytest.fixture
def make_net(tmp_path: Path, wallets_dir: Path) -> Callable[..., LocalNet]:
    """Build a local network; keyword arguments are local chain settings."""

    def make(**settings: Any) -> LocalNet:
        clock = FakeClock()
        wallets = {
            name: create_wallet(wallets_dir, name)
            for name in ("owner", "validator", "miner1", "miner2", "stranger")
        }
        path = tmp_path / f"chain-{len(list(tmp_path.glob('chain-*.db')))}.db"
        settings.setdefault("block_seconds", 12.0)
        settings.setdefault("loopback_axons", True)  # the miners of these tests serve on loopback
        create_local_chain(
            path,
            NETUID,
            owner_hotkey=hotkey_of(wallets["owner"]),
            owner_coldkey=wallets["owner"].coldkeypub.ss58_address,
            clock=clock,
            **settings,
        )
        register_wallet(path, wallets["validator"], stake=1000.0, validator_permit=True)
        register_wallet(path, wallets["miner1"], stake=10.0)
        register_wallet(path, wallets["miner2"])
        return LocalNet(path, wallets_dir, clock, wallets)

    return make


@pytest.fixture
def net(make_net: Callable[..., LocalNet]) -> LocalNet:
    return make_net()


@pytest.fixture
def no_arena_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No ``ARENA_*`` variable and no ``.env`` of the caller's: settings see only what the test sets."""
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("ARENA_"):
            monkeypatch.delenv(name)
