"""A commit's reveal check, as pure decisions: pending before its round or while sealed within its
window, revealed when the committed vector is our row of the weight matrix, missing otherwise.
(The whole path on the local chain, commit to reveal to resubmission: test_weights.py.)"""

from __future__ import annotations

from datetime import UTC, datetime

from neurons.chain.chaintypes import OnChainWeights, WeightRules
from neurons.validator.reveals import expected_row, reveal_status, weights_match
from storage.records import WeightRecord

RULES = WeightRules(
    tempo=20,
    weights_rate_limit=5,
    weights_version=0,
    min_allowed_weights=1,
    max_weight_share=1.0,
    commit_reveal=True,
    block_seconds=12.0,
    reveal_period_epochs=1,
)
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


def seen(block: int, drand_round: int, weights: dict[int, int], *pending: int) -> OnChainWeights:
    return OnChainWeights(
        block=block, drand_round=drand_round, uid=1, weights=weights, pending_rounds=pending
    )


def test_the_row_the_chain_stores_is_max_upscaled_and_quantised() -> None:
    assert expected_row((0, 2, 3), (0.1, 0.6, 0.3)) == ON_CHAIN
    assert expected_row((0, 2), (1.0, 1e-9)) == {0: 65535}  # rounds to zero: dropped, as the SDK does
    assert weights_match((0, 2, 3), (0.1, 0.6, 0.3), {0: 10922, 2: 65535, 3: 32770})  # rounding slack
    assert not weights_match((0, 2, 3), (0.1, 0.6, 0.3), {0: 10923, 2: 65535})  # a uid missing
    assert not weights_match((0, 2, 3), (0.1, 0.6, 0.3), {0: 32768, 2: 65535, 3: 10923})  # another vector


def test_before_its_round_a_commit_is_pending_whatever_the_chain_holds() -> None:
    assert reveal_status(COMMIT, seen(110, 4999, {}, 5000), RULES) == "pending"
    assert reveal_status(COMMIT, seen(110, 4999, {2: 65535}), RULES) == "pending"


def test_after_its_round_a_sealed_commit_is_pending_for_its_window_then_missing() -> None:
    window = (RULES.reveal_period_epochs + 1) * (RULES.tempo + 1)  # 42 blocks after the commit
    assert reveal_status(COMMIT, seen(100 + window, 5001, {}, 5000), RULES) == "pending"  # a late pulse
    assert reveal_status(COMMIT, seen(101 + window, 5001, {}, 5000), RULES) == "missing"


def test_an_opened_commit_is_revealed_only_when_its_vector_is_on_chain() -> None:
    assert reveal_status(COMMIT, seen(130, 5001, ON_CHAIN), RULES) == "revealed"
    assert reveal_status(COMMIT, seen(130, 5001, {}), RULES) == "missing"  # the reveal failed on chain
    older = {0: 65535, 2: 20000}
    assert reveal_status(COMMIT, seen(130, 5001, older), RULES) == "missing"  # the previous vector stands


def test_a_reveal_whose_dest_was_deregistered_since_still_reads_as_revealed() -> None:
    """Issue 27, item 4: subtensor zeroes the weights set to a replaced uid in place (``clear_neuron``),
    so the row keeps the uid with 0; the commit did land, and must not read as missing."""
    replaced = {0: 10923, 2: 65535, 3: 0}  # uid 3 deregistered after the reveal
    top_replaced = {0: 10923, 2: 0, 3: 32768}  # the top uid too: the rest is not rescaled
    assert reveal_status(COMMIT, seen(130, 5001, replaced), RULES) == "revealed"
    assert reveal_status(COMMIT, seen(130, 5001, top_replaced), RULES) == "revealed"
    assert reveal_status(COMMIT, seen(130, 5001, {0: 10923, 2: 65535, 3: 0, 4: 0}), RULES) == "revealed"
    assert reveal_status(COMMIT, seen(130, 5001, {0: 10923, 2: 0, 3: 0}), RULES) == "revealed"
    assert reveal_status(COMMIT, seen(130, 5001, {0: 32768, 2: 65535, 3: 0}), RULES) == "missing"
    assert reveal_status(COMMIT, seen(130, 5001, {0: 10923, 2: 65535, 4: 100}), RULES) == "missing"
