"""Commit-reveal: after a timelocked commit's reveal round, check that its weights are on chain.

On a commit-reveal subnet (finney's default) ``set_weights`` is a sealed commit; its inclusion
says nothing about the weights. The chain opens the commit at its drand reveal round and
applies it under ``set_weights``'s rules then (stake, validator permit, version key, the vector
rules); a reveal that fails is dropped without an event or an error anyone sees. So each weights
pass checks the newest pending commit once its round is due:

- ``pending``: the round is not published yet, or the chain still holds the commit sealed
  (a late drand pulse) within the reveal epoch;
- ``revealed``: our row of the weight matrix is the committed vector (u16 quantisation aside);
- ``missing``: it is not, or the commit is still sealed past its reveal epoch. The pass counts
  it (``arena_weight_reveals_total{result="missing"}``, alert ArenaWeightRevealMissing), logs an
  ERROR and resubmits at once, inside the chain's rate limit.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session, sessionmaker

from neurons import metrics
from neurons.chain.chaintypes import Chain, OnChainWeights, WeightRules
from storage import repository
from storage.records import RevealStatus, WeightRecord

logger = logging.getLogger(__name__)

U16_MAX = 65535
QUANTISATION_SLACK = 3  # u16 units: rounding of the SDK's clip-normalise-quantise chain


@dataclass(frozen=True)
class RevealCheck:
    """What the check of one pending commit found, at ``block``."""

    commit: WeightRecord
    status: RevealStatus
    block: int


def expected_row(uids: Sequence[int], weights: Sequence[float]) -> dict[int, int]:
    """The u16 row the chain stores for a vector: max-upscaled and quantised, zeros dropped."""
    top = max(weights, default=0.0)
    if top <= 0:
        return {}
    row = {int(u): round(w / top * U16_MAX) for u, w in zip(uids, weights, strict=True)}
    return {uid: value for uid, value in row.items() if value > 0}


def weights_match(uids: Sequence[int], weights: Sequence[float], on_chain: Mapping[int, int]) -> bool:
    """Whether ``on_chain`` (dest -> stored u16) is the vector ``uids``/``weights``, quantisation aside."""
    expected = expected_row(uids, weights)
    if set(expected) != set(on_chain):
        return False
    return all(abs(expected[uid] - on_chain[uid]) <= QUANTISATION_SLACK for uid in expected)


def reveal_status(commit: WeightRecord, seen: OnChainWeights, rules: WeightRules) -> RevealStatus:
    """Classify a pending commit against what the chain holds now (see the module docstring)."""
    if commit.reveal_round is None or seen.drand_round < commit.reveal_round:
        return "pending"
    if commit.reveal_round in seen.pending_rounds:
        # Sealed after its round: a late pulse, or one that never came. Give it the reveal
        # epoch and one more, then call it lost.
        window = (rules.reveal_period_epochs + 1) * (rules.tempo + 1)
        return "pending" if seen.block <= (commit.block or 0) + window else "missing"
    return "revealed" if weights_match(commit.uids, commit.weights, seen.weights) else "missing"


async def check_reveal(
    chain: Chain, sessions: sessionmaker[Session], rules: WeightRules
) -> RevealCheck | None:
    """Check the newest pending commit, record and export the outcome; None when none is pending.

    Raises:
        ChainUnavailable: the chain could not be read (nothing is recorded; the next pass retries).
        StorageError: the database could not be read or written.
    """

    def pending() -> WeightRecord | None:
        with sessions() as session:
            return repository.pending_reveal(session)

    commit = await asyncio.to_thread(pending)
    if commit is None or commit.reveal_round is None:
        return None
    seen = await chain.weights_on_chain()
    status = reveal_status(commit, seen, rules)
    check = RevealCheck(commit=commit, status=status, block=seen.block)
    if status == "pending":
        logger.debug("weights_reveal_pending reveal_round=%d block=%d", commit.reveal_round, seen.block)
        return check

    def record() -> bool:
        with sessions() as session:
            return repository.record_reveal(
                session, reveal_round=commit.reveal_round or 0, status=status, block=seen.block
            )

    await asyncio.to_thread(record)
    metrics.WEIGHT_REVEALS.labels(status).inc()
    if status == "revealed":
        metrics.WEIGHTS_LAST_SUCCESS_BLOCK.set(seen.block)
        logger.info("weights_revealed reveal_round=%d block=%d", commit.reveal_round, seen.block)
    else:
        logger.error(
            "weights_reveal_missing reveal_round=%d commit_block=%s block=%d sealed=%s on_chain=%d uids; "
            "resubmitting (a reveal fails on chain when the permit, stake or version key changed)",
            commit.reveal_round,
            commit.block,
            seen.block,
            commit.reveal_round in seen.pending_rounds,
            len(seen.weights),
        )
    return check
