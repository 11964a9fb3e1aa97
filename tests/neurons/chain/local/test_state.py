"""The local chain file: creation, registration, blocks from wall time, the extrinsic log."""

from __future__ import annotations

from pathlib import Path

import pytest

from neurons.chain.local.state import LocalChain, create_local_chain, read_extrinsics, read_weights, register
from neurons.errors import LocalChainError


class Clock:
    def __init__(self, now: float = 5_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def make(path: Path, clock: Clock, **settings: object) -> LocalChain:
    create_local_chain(path, 3, owner_hotkey="owner-hk", owner_coldkey="owner-ck", clock=clock, **settings)
    return LocalChain(path, clock=clock)


def test_the_owner_holds_uid_zero_and_registrations_follow(tmp_path: Path) -> None:
    chain = make(tmp_path / "c.db", Clock())

    assert register(chain.path, "a", "ca", stake=2.5, validator_permit=True) == 1
    assert register(chain.path, "b", "cb") == 2

    view = chain.view()
    assert [(n.uid, n.hotkey, n.coldkey) for n in view.neurons] == [
        (0, "owner-hk", "owner-ck"),
        (1, "a", "ca"),
        (2, "b", "cb"),
    ]
    assert view.neurons[1].stake_rao == 2_500_000_000 and view.neurons[1].validator_permit
    assert chain.config.netuid == 3


def test_registering_again_updates_stake_and_keeps_the_uid(tmp_path: Path) -> None:
    chain = make(tmp_path / "c.db", Clock())
    uid = register(chain.path, "a", "ca", stake=1.0)

    assert register(chain.path, "a", "ca", stake=9.0, validator_permit=True) == uid
    assert chain.view().neurons[uid].stake_rao == 9 * 10**9 and chain.view().neurons[uid].validator_permit
    with pytest.raises(LocalChainError, match="another coldkey"):
        register(chain.path, "a", "someone-else")


def test_a_full_subnet_refuses_new_hotkeys(tmp_path: Path) -> None:
    chain = make(tmp_path / "c.db", Clock(), max_uids=2)
    register(chain.path, "a", "ca")

    with pytest.raises(LocalChainError, match="full"):
        register(chain.path, "b", "cb")


def test_blocks_follow_the_clock(tmp_path: Path) -> None:
    clock = Clock()
    chain = make(tmp_path / "c.db", clock, block_seconds=2.0)

    assert chain.block() == 1
    clock.now += 1.9
    assert chain.block() == 1
    clock.now += 0.1
    assert chain.block() == 2
    clock.now += 20.0
    assert chain.block() == 12


def test_creation_refuses_to_clobber_and_unknown_settings(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    make(path, Clock())
    register(path, "a", "ca")

    with pytest.raises(LocalChainError, match="already exists"):
        make(path, Clock())
    with pytest.raises(LocalChainError, match="unknown"):
        create_local_chain(tmp_path / "d.db", 3, owner_hotkey="o", owner_coldkey="c", tempo_typo=3)
    make(path, Clock(), overwrite=True)
    assert len(LocalChain(path).view().neurons) == 1


def test_dispatch_logs_accepted_and_refused_calls(tmp_path: Path) -> None:
    chain = make(tmp_path / "c.db", Clock(), weights_rate_limit=0)
    register(chain.path, "v", "cv", validator_permit=True)
    register(chain.path, "m", "cm")
    call = {"netuid": 3, "mecid": 0, "dests": [2], "weights": [100], "version_key": 0}

    accepted = chain.dispatch("v", "SubtensorModule", "set_mechanism_weights", call)
    refused = chain.dispatch("nobody", "SubtensorModule", "set_mechanism_weights", call)

    assert accepted.success and (accepted.block, accepted.index) == (1, 0)
    assert not refused.success and refused.error == "HotKeyNotRegisteredInSubNet" and refused.index == 1
    assert read_weights(chain.path) == {1: {2: 65535}}  # max-upscaled by the pallet
    assert [(r.signer, r.error) for r in read_extrinsics(chain.path)] == [
        ("v", None),
        ("nobody", "HotKeyNotRegisteredInSubNet"),
    ]
    assert chain.extrinsic_count("v") == 1


def test_a_missing_file_is_never_created(tmp_path: Path) -> None:
    with pytest.raises(LocalChainError, match="no local chain"):
        register(tmp_path / "none.db", "a", "ca")
    assert not (tmp_path / "none.db").exists()
