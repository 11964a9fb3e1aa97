"""A commit's reveal check, as pure decisions: pending before its round or while the chain holds it
sealed, revealed when the committed vector is our row of the weight matrix, superseded when a newer
commit's is, missing otherwise. (The whole path on the local chain: test_weights.py.)"""

from __future__ import annotations

from datetime import UTC, datetime

from neurons.chain.chaintypes import OnChainWeights, SealedCommit
from neurons.validator.reveals import expected_row, reveal_status, weights_match
from storage.records import WeightRecord

COMMIT = WeightRecord(
    uids=(0, 2, 3),
    weights=(0.1, 0.6, 0.3),
    block=100,
    success=True,
    at=datetime(2026, 12, 1, tzinfo=UTC),
    reveal_round=5000,
    reveal_status="pending",
)
ON_CHAIN = {0: 10923, 2: 65535, 3: 32768}  # the committed vector, max-upscaled and quantised


def seen(block: int, drand_round: int, weights: dict[int, int], *sealed: SealedCommit) -> OnChainWeights:
    return OnChainWeights(block=block, drand_round=drand_round, uid=1, weights=weights, sealed=sealed)


SEALED = SealedCommit(block=100, reveal_round=5000)


def test_the_row_the_chain_stores_is_max_upscaled_and_quantised() -> None:
    assert expected_row((0, 2, 3), (0.1, 0.6, 0.3)) == ON_CHAIN
    assert expected_row((0, 2), (1.0, 1e-9)) == {0: 65535}  # rounds to zero: dropped, as the SDK does
    assert weights_match((0, 2, 3), (0.1, 0.6, 0.3), {0: 10922, 2: 65535, 3: 32770})  # rounding slack
    assert not weights_match((0, 2, 3), (0.1, 0.6, 0.3), {0: 10923, 2: 65535})  # a uid missing
    assert not weights_match((0, 2, 3), (0.1, 0.6, 0.3), {0: 32768, 2: 65535, 3: 10923})  # another vector


def test_before_its_round_a_commit_is_pending_whatever_the_chain_holds() -> None:
    assert reveal_status(COMMIT, seen(110, 4999, {}, SEALED)) == "pending"
    assert reveal_status(COMMIT, seen(110, 4999, {2: 65535})) == "pending"


def test_a_commit_the_chain_still_holds_is_pending_however_late_and_then_settles() -> None:
    """The chain drops a commit whose reveal epoch ended: until then the check waits (no window of ours)."""
    assert reveal_status(COMMIT, seen(10**6, 10**6, {}, SEALED)) == "pending"  # a late pulse, or none yet
    assert reveal_status(COMMIT, seen(10**6, 10**6, {})) == "missing"  # dropped: no drand pulse
    other = SealedCommit(block=90, reveal_round=5000)  # another commit of the same round
    assert reveal_status(COMMIT, seen(130, 5001, ON_CHAIN, other)) == "revealed"
    assert reveal_status(COMMIT, seen(99, 5001, {})) == "pending"  # read at a block before the commit


def test_an_older_commit_whose_row_a_newer_reveal_replaced_is_superseded_not_missing() -> None:
    newer = COMMIT.model_copy(update={"block": 120, "reveal_round": 5003, "weights": (0.5, 0.3, 0.2)})
    newer_row = expected_row(newer.uids, newer.weights)

    assert reveal_status(COMMIT, seen(150, 5004, newer_row), [newer]) == "superseded"
    assert reveal_status(newer, seen(150, 5004, newer_row)) == "revealed"
    # The newer one still sealed: the row is neither's, so the older one is missing.
    held = SealedCommit(block=120, reveal_round=5003)
    assert reveal_status(COMMIT, seen(150, 5004, newer_row, held), [newer]) == "missing"


def test_an_opened_commit_is_revealed_only_when_its_vector_is_on_chain() -> None:
    assert reveal_status(COMMIT, seen(130, 5001, ON_CHAIN)) == "revealed"
    assert reveal_status(COMMIT, seen(130, 5001, {})) == "missing"  # the reveal failed on chain
    older = {0: 65535, 2: 20000}
    assert reveal_status(COMMIT, seen(130, 5001, older)) == "missing"  # the previous vector stands


def test_a_reveal_whose_dest_was_deregistered_since_still_reads_as_revealed() -> None:
    """Issue 27, item 4: subtensor zeroes the weights set to a replaced uid in place (``clear_neuron``),
    so the row keeps the uid with 0; the commit did land, and must not read as missing."""
    replaced = {0: 10923, 2: 65535, 3: 0}  # uid 3 deregistered after the reveal
    top_replaced = {0: 10923, 2: 0, 3: 32768}  # the top uid too: the rest is not rescaled
    assert reveal_status(COMMIT, seen(130, 5001, replaced)) == "revealed"
    assert reveal_status(COMMIT, seen(130, 5001, top_replaced)) == "revealed"
    assert reveal_status(COMMIT, seen(130, 5001, {0: 10923, 2: 65535, 3: 0, 4: 0})) == "revealed"
    assert reveal_status(COMMIT, seen(130, 5001, {0: 10923, 2: 0, 3: 0})) == "revealed"
    assert reveal_status(COMMIT, seen(130, 5001, {0: 32768, 2: 65535, 3: 0})) == "missing"
    assert reveal_status(COMMIT, seen(130, 5001, {0: 10923, 2: 65535, 4: 100})) == "missing"
