"""The local chain file: creation, registration, blocks from wall time, the extrinsic log."""

from __future__ import annotations

from pathlib import Path

import pytest

from neurons.chain.local.records import LocalChainConfig
from neurons.chain.local.state import (
    LocalChain,
    create_local_chain,
    read_commits,
    read_extrinsics,
    read_weights,
    register,
    replace_neuron,
)
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
    chain = make(tmp_path / "c.db", Clock(), weights_rate_limit=0, commit_reveal=False)
    register(chain.path, "v", "cv", validator_permit=True)
    register(chain.path, "m", "cm")
    call = {"netuid": 3, "mecid": 0, "dests": [2], "weights": [100], "version_key": 0}

    accepted = chain.dispatch("v", "SubtensorModule", "set_mechanism_weights", call)
    refused = chain.dispatch("nobody", "SubtensorModule", "set_mechanism_weights", call)

    assert accepted.success and (accepted.block, accepted.index) == (2, 0)  # the block after the head
    assert not refused.success and refused.error == "HotKeyNotRegisteredInSubNet" and refused.index == 1
    assert read_weights(chain.path) == {1: {2: 65535}}  # max-upscaled by the pallet
    assert [(r.signer, r.error) for r in read_extrinsics(chain.path)] == [
        ("v", None),
        ("nobody", "HotKeyNotRegisteredInSubNet"),
    ]
    assert chain.extrinsic_count("v") == 1


def test_the_pool_refuses_without_a_block_and_checks_the_nonce(tmp_path: Path) -> None:
    chain = make(tmp_path / "c.db", Clock(), weights_rate_limit=0, commit_reveal=False, min_stake=5.0)
    register(chain.path, "v", "cv", stake=10.0, validator_permit=True)
    register(chain.path, "m", "cm")
    call = {"netuid": 3, "mecid": 0, "dests": [2], "weights": [100], "version_key": 0}

    poor = chain.dispatch("m", "SubtensorModule", "set_mechanism_weights", call, nonce=0)
    future = chain.dispatch("v", "SubtensorModule", "set_mechanism_weights", call, nonce=1)
    first = chain.dispatch("v", "SubtensorModule", "set_mechanism_weights", call, nonce=0)
    stale = chain.dispatch("v", "SubtensorModule", "set_mechanism_weights", call, nonce=0)

    assert (poor.error, poor.included) == ("StakeAmountTooLow", False)
    assert (future.error, future.included) == ("Future", False)
    assert first.success and first.included
    assert (stale.error, stale.included) == ("Stale", False)
    assert [(r.signer, r.error) for r in read_extrinsics(chain.path)] == [("v", None)]  # only what got in
    assert (chain.extrinsic_count("v"), chain.extrinsic_count("m")) == (1, 0)


COMMIT = {"netuid": 3, "mecid": 0, "commit": b"sealed", "reveal_round": 77, "commit_reveal_version": 4}


def test_a_commit_opens_in_its_reveal_epoch_at_the_first_block_after_its_round(tmp_path: Path) -> None:
    clock = Clock()
    # Epochs of 5 blocks from the anchor (block 0 on netuid 3): the commit (head 1, included in
    # block 2, epoch 0: blocks 0 to 4) opens in epoch 1, blocks 5 to 9.
    chain = make(tmp_path / "c.db", clock, block_seconds=12.0, tempo=5)
    register(chain.path, "v", "cv", validator_permit=True)
    register(chain.path, "m", "cm")
    plain = {"dests": [0, 2], "weights": [32768, 65535], "version_key": 0}
    sealed = {"reveal_at": clock.now + 62.0, "plaintext": plain}

    outcome = chain.dispatch(
        "v", "SubtensorModule", "commit_timelocked_mechanism_weights", COMMIT, sealed=sealed
    )
    clock.now += 50.0
    before = read_weights(chain.path, clock=clock)
    [pending] = chain.pending_commits()
    clock.now += 20.0  # +70 s: block 6, made at +60 s, before the round
    inside = read_weights(chain.path, clock=clock)
    clock.now += 2.0  # +72 s: block 7, the first made after the round

    assert outcome.success and before == inside == {} and pending.reveal_round == 77
    assert read_weights(chain.path, clock=clock) == {1: {0: 32768, 2: 65535}}
    [commit] = read_commits(chain.path, clock=clock)
    assert commit.status == "revealed" and commit.revealed_block == 7  # block 7 is made at +72 s
    assert chain.view().neurons[1].last_update == outcome.block  # the commit's block, not the reveal's


def test_a_failed_reveal_is_silent_on_chain(tmp_path: Path) -> None:
    clock = Clock()
    chain = make(tmp_path / "c.db", clock)
    register(chain.path, "v", "cv", validator_permit=True)
    sealed = {"reveal_at": clock.now + 5.0, "plaintext": {"dests": [0], "weights": [1], "version_key": 0}}
    chain.dispatch("v", "SubtensorModule", "commit_timelocked_mechanism_weights", COMMIT, sealed=sealed)
    register(chain.path, "v", "cv", validator_permit=False)  # the permit is lost before the reveal
    clock.now += 25.0  # block 26: in the reveal epoch (blocks 17 to 37), the round long published

    assert read_weights(chain.path, clock=clock) == {}
    [commit] = read_commits(chain.path, clock=clock)
    assert (commit.status, commit.error) == ("failed", "NeuronNoValidatorPermit")
    assert [r.call for r in read_extrinsics(chain.path)] == [
        "SubtensorModule.commit_timelocked_mechanism_weights"
    ]
    assert chain.pending_commits() == []


def test_a_round_published_before_the_reveal_epoch_waits_for_it_and_one_after_it_expires(
    tmp_path: Path,
) -> None:
    clock = Clock()
    chain = make(tmp_path / "c.db", clock, block_seconds=12.0, tempo=5, weights_rate_limit=0)
    register(chain.path, "v", "cv", validator_permit=True)
    plain = {"dests": [0], "weights": [1], "version_key": 0}
    # The commits (block 2, epoch 0) open in epoch 1: blocks 5 to 9 (5 blocks from the anchor, 0).
    early = {"reveal_at": clock.now - 5.0, "plaintext": plain}  # published already: waits for block 5
    late = {"reveal_at": clock.now + 200.0, "plaintext": plain}  # after epoch 1 ends (block 9)
    for sealed in (early, late):
        chain.dispatch("v", "SubtensorModule", "commit_timelocked_mechanism_weights", COMMIT, sealed=sealed)

    clock.now += 11.0  # still block 1
    waiting = [c.status for c in read_commits(chain.path, clock=clock)]
    clock.now += 100.0  # block 10
    settled = read_commits(chain.path, clock=clock)

    assert waiting == ["pending", "pending"]
    assert [(c.status, c.revealed_block, c.error) for c in settled] == [
        ("revealed", 5, None),
        ("expired", None, "NoDrandPulse"),
    ]


def test_a_replaced_uid_loses_its_weights_and_others_weights_to_it_are_zeroed_in_place(
    tmp_path: Path,
) -> None:
    clock = Clock()
    chain = make(tmp_path / "c.db", clock, weights_rate_limit=0, commit_reveal=False)
    register(chain.path, "v", "cv", validator_permit=True)
    register(chain.path, "m", "cm", validator_permit=True)
    register(chain.path, "n", "cn")
    to_m = {"netuid": 3, "mecid": 0, "dests": [2, 3], "weights": [65535, 30000], "version_key": 0}
    chain.dispatch("v", "SubtensorModule", "set_mechanism_weights", to_m)
    chain.dispatch("m", "SubtensorModule", "set_mechanism_weights", {**to_m, "dests": [1, 3]})
    clock.now += 10.0

    replace_neuron(chain.path, 2, "late", "cl", clock=clock)

    assert read_weights(chain.path, clock=clock) == {1: {2: 0, 3: 30000}}  # not rescaled
    late = chain.view().neurons[2]
    assert (late.hotkey, late.last_update, late.registered_at) == ("late", chain.block(), chain.block())
    with pytest.raises(LocalChainError):
        replace_neuron(chain.path, 0, "x", "cx", clock=clock)  # the owner's uid is never replaced


def test_a_missing_file_is_never_created(tmp_path: Path) -> None:
    with pytest.raises(LocalChainError, match="no local chain"):
        register(tmp_path / "none.db", "a", "ca")
    assert not (tmp_path / "none.db").exists()


def test_epochs_follow_subtensors_stateful_schedule() -> None:
    """An epoch runs ``tempo`` blocks after the last (``LastEpochBlock + tempo``), from an anchor
    staggered by ``netuid % tempo`` below the block the subnet was added at (block 1, saturating)."""
    config = LocalChainConfig(netuid=3, owner_hotkey="o", owner_coldkey="c", genesis_time=0.0, tempo=10)
    staggered = LocalChainConfig(netuid=10, owner_hotkey="o", owner_coldkey="c", genesis_time=0.0, tempo=10)

    assert (config.epoch_anchor(), staggered.epoch_anchor()) == (0, 1)
    assert [config.epoch_index(b) for b in (1, 9, 10, 19, 20)] == [0, 0, 1, 1, 2]
    assert [config.epoch_start(i) for i in (1, 2)] == [10, 20]
    assert [config.last_epoch_block(b) for b in (1, 9, 10, 11, 19, 20)] == [0, 0, 10, 10, 10, 20]
    assert [staggered.epoch_index(b) for b in (10, 11, 20, 21)] == [0, 1, 1, 2]
