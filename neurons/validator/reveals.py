"""Commit-reveal: check that each timelocked commit's weights landed, once the chain has dealt with it.

On a commit-reveal subnet (finney's default) ``set_weights`` is a sealed commit; its inclusion
says nothing about the weights. The chain holds the commit in ``TimelockedWeightCommits`` until
it opens it in its reveal epoch, under ``set_weights``'s rules then (stake, validator permit,
version key, the vector rules), or drops it when that epoch ends without its drand pulse; a
reveal that fails is dropped without an event or an error anyone sees. So each weights pass
reads, at one block (``Chain.weights_on_chain``), our row of the weight matrix and our sealed
commits, and classifies every commit still pending in our records, oldest first:

- ``pending``: its round is not published yet, the block read is older than the commit, or the
  chain still holds it sealed. When its reveal epoch ends is the chain's business: no epoch or
  reveal boundary is computed here (the SDK timed the round by the chain's own schedule);
- ``revealed``: the chain holds it no longer and our row is its vector (u16 quantisation aside;
  a dest the chain zeroed in place since, as subtensor does to a deregistered uid, still counts);
- ``superseded``: our row is instead the vector of a newer commit the chain has also opened
  (two commits of one epoch open in one block; or both opened between two passes), so this
  one's outcome can no longer be read;
- ``missing``: neither. The pass counts it (``arena_weight_reveals_total{result="missing"}``,
  alert ArenaWeightRevealMissing), logs an ERROR and resubmits at once, inside the chain's
  rate limit.

A failed reveal of a vector equal to the one already on chain reads as revealed: the head cannot
tell them apart, and the weights on chain are that vector either way.

A submit cut off by its timeout may still have landed; the pass records it ``unconfirmed``
(``neurons.validator.weights``) and the next read confirms it (``confirm_landed``): a sealed
commit of ours that no stored submission holds is that attempt's (it is then checked like any
other), and on a subnet without commit-reveal our row holding its vector with a ``LastUpdate``
newer than any stored success says it landed there.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session, sessionmaker

from neurons import metrics
from neurons.chain.chaintypes import Chain, OnChainWeights
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
    """Whether ``on_chain`` (dest -> stored u16) is the vector ``uids``/``weights``, quantisation aside.

    A dest stored with 0 was zeroed in place by the chain (subtensor's ``clear_neuron`` when its
    uid is replaced); the rest of the row keeps its values (no rescale), so it still matches.
    """
    expected = expected_row(uids, weights)
    live = {uid: value for uid, value in on_chain.items() if value > 0}
    zeroed = {uid for uid, value in on_chain.items() if value == 0}
    if set(live) - set(expected) or set(expected) - set(live) - zeroed:
        return False
    return all(abs(expected[uid] - live[uid]) <= QUANTISATION_SLACK for uid in live)


def _sealed(commit: WeightRecord, seen: OnChainWeights) -> bool:
    return any(
        sealed.reveal_round == commit.reveal_round and commit.block in (None, sealed.block)
        for sealed in seen.sealed
    )


def _settled(commit: WeightRecord, seen: OnChainWeights) -> bool:
    """Whether the chain, at the block read, has opened or dropped ``commit``."""
    if commit.reveal_round is None or seen.drand_round < commit.reveal_round:
        return False
    return seen.block >= (commit.block or 0) and not _sealed(commit, seen)


def reveal_status(
    commit: WeightRecord, seen: OnChainWeights, newer: Sequence[WeightRecord] = ()
) -> RevealStatus:
    """Classify a pending commit against what the chain held at ``seen.block`` (the module docstring).

    Args:
        commit: the commit to classify.
        seen: our row and sealed commits, read at one block.
        newer: our commits made after it (any status): one the chain opened and whose vector is
            our row makes this one ``superseded`` rather than ``missing``.
    """
    if not _settled(commit, seen):
        return "pending"
    if weights_match(commit.uids, commit.weights, seen.weights):
        return "revealed"
    if any(_settled(n, seen) and weights_match(n.uids, n.weights, seen.weights) for n in newer):
        return "superseded"
    return "missing"


def confirm_landed(session: Session, attempt: WeightRecord, seen: OnChainWeights) -> WeightRecord | None:
    """Confirm the unconfirmed ``attempt`` from what the chain held at ``seen.block``; None: no sign of it.

    Returns:
        The attempt as now stored (a commit: ``pending``, to be checked), or None.
    """
    for sealed in sorted(seen.sealed, key=lambda s: s.block, reverse=True):
        if not repository.commit_recorded(session, block=sealed.block, reveal_round=sealed.reveal_round):
            return repository.confirm_submission(
                session, block=sealed.block, reveal_round=sealed.reveal_round
            )
    last = repository.last_successful_weights(session)
    newer = seen.last_update > (last.block or 0 if last is not None else 0)
    if newer and weights_match(attempt.uids, attempt.weights, seen.weights):
        return repository.confirm_submission(session, block=seen.last_update, reveal_round=None)
    return None


async def check_reveals(chain: Chain, sessions: sessionmaker[Session]) -> tuple[RevealCheck, ...]:
    """Confirm a timed-out submit that landed, then check every pending commit, oldest first.

    Each settled check is recorded and exported.

    Returns:
        One check per pending commit (``pending`` ones included, not recorded); empty when none.

    Raises:
        ChainUnavailable: the chain could not be read (nothing is recorded; the next pass retries).
        StorageError: the database could not be read or written.
    """

    def load() -> tuple[list[WeightRecord], WeightRecord | None]:
        with sessions() as session:
            return repository.pending_reveals(session), repository.unconfirmed_submission(session)

    commits, attempt = await asyncio.to_thread(load)
    if not commits and attempt is None:
        return ()
    seen = await chain.weights_on_chain()
    if attempt is not None:

        def confirm() -> WeightRecord | None:
            with sessions() as session:
                return confirm_landed(session, attempt, seen)

        confirmed = await asyncio.to_thread(confirm)
        if confirmed is not None:
            logger.warning("weights_confirmed block=%s reveal_round=%s (its submit had timed out)",
                           confirmed.block, confirmed.reveal_round)  # fmt: skip
            if confirmed.reveal_status == "pending":
                commits.append(confirmed)
    checks = tuple(
        RevealCheck(commit=c, status=reveal_status(c, seen, commits[i + 1 :]), block=seen.block)
        for i, c in enumerate(commits)
    )
    settled = [check for check in checks if check.status != "pending"]

    def record() -> None:
        with sessions() as session:
            for check in settled:
                repository.record_reveal(
                    session,
                    reveal_round=check.commit.reveal_round or 0,
                    commit_block=check.commit.block,
                    status=check.status,
                    block=seen.block,
                )

    if settled:
        await asyncio.to_thread(record)
    for check in checks:
        _report(check, seen)
    return checks


def _report(check: RevealCheck, seen: OnChainWeights) -> None:
    commit, status = check.commit, check.status
    if status == "pending":
        logger.debug("weights_reveal_pending reveal_round=%s block=%d", commit.reveal_round, seen.block)
        return
    metrics.WEIGHT_REVEALS.labels(status).inc()
    if status == "revealed":
        metrics.WEIGHTS_LAST_SUCCESS_BLOCK.set(seen.block)
        logger.info("weights_revealed reveal_round=%s commit_block=%s block=%d", commit.reveal_round,
                    commit.block, seen.block)  # fmt: skip
    elif status == "superseded":
        logger.info("weights_reveal_superseded reveal_round=%s commit_block=%s block=%d", commit.reveal_round,
                    commit.block, seen.block)  # fmt: skip
    else:
        logger.error(
            "weights_reveal_missing reveal_round=%s commit_block=%s block=%d on_chain=%d uids; "
            "resubmitting (a reveal fails on chain when the permit, stake or version key changed, "
            "or no drand pulse came in its reveal epoch)",
            commit.reveal_round,
            commit.block,
            seen.block,
            len(seen.weights),
        )
