"""The weights pass: stored scores -> standings -> a weight vector on today's uids -> set_weights, recorded.

Deterministic: the vector depends only on the stored judgments (each hotkey's last ``window``
episodes, outage-unscored ones left out), the policy, the metagraph and the subnet's
``MaxWeightsLimit`` at submission time. Scores are keyed by hotkey and mapped to uids only here,
so a uid taken over by a new hotkey inherits nothing. Cadence: at most one successful
submission per ``min_blocks`` (default: the subnet's tempo), and never inside the chain's rate
limit, both read from chain at each pass.

The chain's ``MaxWeightsLimit`` (``WeightRules.max_weight_share``) is honoured here, not left
to the SDK: no uid, the burn uid included, may hold more than that share. Left to the SDK, its
clip redistributes the excess silently and, where the limit cannot be met at all, submits a
uniform vector that ignores every score (and that the chain refuses anyway).

No vector is submitted before any score is stored (``no_scores``, a fresh database): it would
send everything to the burn uid, and the cadence would then hold the first vector with miners in
it back a whole tempo. Here the excess
is redistributed over the other uids in proportion to their weight (``cap_shares``), so the
vector recorded, exported and checked after a reveal is the one that lands; where no vector
can meet the limit the pass refuses with ``weight_limit``. ``weight_limit_warning`` says at
start-up what a limit below 65535 does to the policy (a burn share above it cannot be burned).

On a commit-reveal subnet each pass first checks every commit still pending
(``neurons.validator.reveals``); a missing reveal is resubmitted at once.
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from sqlalchemy.orm import Session, sessionmaker

from judging.scores import MinerStanding, ScorePolicy, standings, weight_vector
from neurons import metrics
from neurons.chain.chaintypes import Chain, MetagraphSnapshot, WeightRules, WeightSubmission
from neurons.errors import ChainUnavailable
from neurons.protocol import WEIGHTS_VERSION_KEY
from neurons.validator.reveals import RevealCheck, check_reveals
from storage import repository
from storage.records import WeightRecord

logger = logging.getLogger(__name__)

WeightsResult = Literal[
    "submitted", "not_due", "rate_limited", "outdated_version", "no_owner", "weight_limit", "no_scores"
]
# Below the chain's limit by this fraction, so u16 rounding cannot lift the top share over it.
LIMIT_MARGIN = 1e-3


@dataclass(frozen=True)
class WeightPlan:
    """A weight vector ready to submit, with the standings it came from."""

    uids: tuple[int, ...]
    weights: tuple[float, ...]
    standings: dict[str, MinerStanding]
    hotkey_to_uid: dict[str, int]


@dataclass(frozen=True)
class WeightsOutcome:
    """What a weights pass did; ``submission`` is set when it reached the chain.

    ``reveals`` are the checks of the commits that were pending, oldest first.
    """

    result: WeightsResult
    block: int
    plan: WeightPlan | None = None
    submission: WeightSubmission | None = None
    reveals: tuple[RevealCheck, ...] = ()

    @property
    def reveal(self) -> RevealCheck | None:
        """The check of the newest commit that was pending, or None."""
        return self.reveals[-1] if self.reveals else None


def cap_shares(weights: tuple[float, ...], max_share: float) -> tuple[float, ...] | None:
    """Normalise ``weights`` so that none exceeds ``max_share``, the excess spread pro rata over the rest.

    Water-filling: uids over the cap are held at it and the remaining mass is shared among the
    others in proportion to their weight, until none is over. Zero weights stay zero.

    Returns:
        The capped vector (summing to 1), or None when no vector over these uids can meet the
        cap (fewer than ``1 / max_share`` non-zero weights).
    """
    total = sum(weights)
    if total <= 0:
        return None
    shares = [w / total for w in weights]
    if max_share >= 1.0:
        return tuple(shares)
    if sum(1 for s in shares if s > 0) * max_share < 1.0:
        return None
    capped: set[int] = set()
    while True:
        over = {i for i, s in enumerate(shares) if s > max_share and i not in capped}
        if not over:
            return tuple(shares)
        capped |= over
        free = 1.0 - max_share * len(capped)
        rest = sum(s for i, s in enumerate(shares) if i not in capped)
        shares = [max_share if i in capped else s * free / rest for i, s in enumerate(shares)]


def _usable_share(rules: WeightRules) -> float:
    # 65535 means no limit on chain; below it, keep a margin for the u16 rounding.
    return 1.0 if rules.max_weight_share >= 1.0 else rules.max_weight_share * (1 - LIMIT_MARGIN)


def weight_limit_warning(rules: WeightRules, policy: ScorePolicy) -> str | None:
    """What the subnet's ``MaxWeightsLimit`` does to this policy, or None when it does nothing (65535)."""
    limit = rules.max_weight_share
    if limit >= 1.0:
        return None
    parts = [
        f"the subnet's MaxWeightsLimit caps every uid at {limit:.2%} of the weights",
        f"at least {math.ceil(1 / limit)} uids need weight or nothing can be submitted",
    ]
    if policy.burn_share > limit:
        parts.append(f"the burn share {policy.burn_share:.0%} is cut to {limit:.2%}: the rest goes to miners")
    return "; ".join(parts)


def plan_weights(session: Session, snapshot: MetagraphSnapshot, policy: ScorePolicy) -> WeightPlan | None:
    """Compute the weight vector from stored scores over ``snapshot``'s uids; None without an owner uid.

    Judgments whose reasoning went unscored because the judge was down, and episodes in which
    our inference gateway failed, are left out of the window (``exclude_reasoning_outages``,
    ``exclude_gateway_faults``), so a fault of ours never moves weights.
    """
    if snapshot.owner_uid is None:
        return None
    samples = repository.score_samples(
        session, window=policy.window, exclude_reasoning_outages=True, exclude_gateway_faults=True
    )
    standing = standings(samples, policy)
    hotkey_to_uid = {neuron.hotkey: neuron.uid for neuron in snapshot.neurons}
    uids, weights = weight_vector(standing, hotkey_to_uid, owner_uid=snapshot.owner_uid, policy=policy)
    if any(not math.isfinite(w) or w < 0 for w in weights):  # weight_vector promises this; a bug otherwise
        raise ValueError(f"weight vector has a negative or non-finite value: {weights}")
    return WeightPlan(tuple(uids), tuple(weights), standing, hotkey_to_uid)


def not_due(
    session: Session,
    snapshot: MetagraphSnapshot,
    rules: WeightRules,
    *,
    hotkey: str,
    min_blocks: int | None,
    version_key: int,
) -> WeightsResult | None:
    """Why no submission should be made now, or None when one is due.

    Due means: our version key is one the chain accepts, the chain's rate limit has passed since
    our last update, and ``min_blocks`` (default: the tempo) have passed since our last success.
    """
    if version_key < rules.weights_version:
        return "outdated_version"
    me = snapshot.by_hotkey(hotkey)
    if me is not None and me.last_update and snapshot.block - me.last_update <= rules.weights_rate_limit:
        return "rate_limited"
    last = repository.last_successful_weights(session)
    gap = min_blocks if min_blocks is not None else max(1, rules.tempo)
    if last is not None and last.block is not None and snapshot.block - last.block < gap:
        return "not_due"
    return None


async def weights_pass(
    chain: Chain,
    sessions: sessionmaker[Session],
    policy: ScorePolicy,
    *,
    min_blocks: int | None = None,
    version_key: int = WEIGHTS_VERSION_KEY,
) -> WeightsOutcome:
    """Submit weights if due; record every submission, successful or refused, and export metrics.

    Raises:
        ChainUnavailable: the chain could not be read (nothing is recorded), or the submission's
            outcome is unknown (recorded ``unconfirmed``; a later pass confirms it if it landed).
            The job retries.
        StorageError: the database could not be read or written.
    """
    rules = await chain.weight_rules()
    reveals = await check_reveals(chain, sessions)
    missing = any(check.status == "missing" for check in reveals)
    snapshot = await chain.snapshot()
    metrics.CHAIN_BLOCK.set(snapshot.block)

    def prepare() -> tuple[WeightsResult | None, WeightPlan | None]:
        with sessions() as session:
            why = not_due(
                session, snapshot, rules, hotkey=chain.hotkey, min_blocks=min_blocks, version_key=version_key
            )
            if why == "not_due" and missing:
                why = None  # a commit never landed: resubmit now, inside the rate limit
            plan = plan_weights(session, snapshot, policy)
            if plan is not None and not plan.standings:
                # A fresh database: the vector would be all burn, and the cadence would then hold
                # the first scored one back a whole tempo.
                return why or "no_scores", plan
            if plan is not None:
                capped = cap_shares(plan.weights, _usable_share(rules))
                if capped is None:
                    return why or "weight_limit", plan
                plan = WeightPlan(plan.uids, capped, plan.standings, plan.hotkey_to_uid)
            if why is None and plan is not None:
                repository.record_scores(
                    session,
                    standings=plan.standings.values(),
                    hotkey_to_uid=plan.hotkey_to_uid,
                    block=snapshot.block,
                    at=datetime.now(UTC),
                )
            return why, plan

    why, plan = await asyncio.to_thread(prepare)
    if plan is not None:
        _export_scores(plan)
    if why is not None or plan is None:
        result: WeightsResult = why or "no_owner"
        level = logging.ERROR if result in ("outdated_version", "no_owner", "weight_limit") else logging.INFO
        logger.log(
            level,
            "weights_skipped reason=%s block=%d version_key=%d chain_version=%d max_share=%.4f uids=%d",
            result,
            snapshot.block,
            version_key,
            rules.weights_version,
            rules.max_weight_share,
            len(plan.uids) if plan else 0,
        )
        return WeightsOutcome(result=result, block=snapshot.block, plan=plan, reveals=reveals)
    try:
        submission = await chain.set_weights(plan.uids, plan.weights, version_key=version_key)
    except ChainUnavailable as exc:
        # The outcome is unknown: it may have landed. Recorded so that a later pass confirms it
        # from the chain (reveals.confirm_landed) instead of leaving a commit nobody checks.
        await asyncio.to_thread(_record_unconfirmed, sessions, plan, version_key, exc)
        raise
    committed = submission.success and submission.committed
    record = WeightRecord(
        uids=submission.uids,
        weights=submission.weights,
        block=submission.block,
        success=submission.success,
        message=submission.message[:2000],
        version_key=version_key,
        at=datetime.now(UTC),
        reveal_round=submission.reveal_round,
        reveal_status="pending" if committed else None,
    )

    def store() -> bool:
        with sessions() as session:
            return repository.record_weight_submission(session, submission=record)

    await asyncio.to_thread(store)
    _export_submission(submission, snapshot.block)
    return WeightsOutcome(
        result="submitted", block=snapshot.block, plan=plan, submission=submission, reveals=reveals
    )


def _record_unconfirmed(
    sessions: sessionmaker[Session], plan: WeightPlan, version_key: int, error: ChainUnavailable
) -> None:
    record = WeightRecord(
        uids=plan.uids,
        weights=plan.weights,
        success=False,
        message=f"outcome unknown: {error}"[:2000],
        version_key=version_key,
        at=datetime.now(UTC),
        reveal_status="unconfirmed",
    )
    with sessions() as session:
        repository.record_weight_submission(session, submission=record)


def _export_scores(plan: WeightPlan) -> None:
    metrics.MINER_SCORE.clear()
    for hotkey, standing in plan.standings.items():
        uid = plan.hotkey_to_uid.get(hotkey)
        if uid is not None:
            metrics.MINER_SCORE.labels(str(uid)).set(standing.lower)


def _export_submission(submission: WeightSubmission, block: int) -> None:
    metrics.WEIGHT_SUBMISSIONS.labels("success" if submission.success else submission.code or "refused").inc()
    if not submission.success:
        return
    if not submission.committed:  # a commit's weights land at its reveal (reveals.check_reveals)
        metrics.WEIGHTS_LAST_SUCCESS_BLOCK.set(submission.block or block)
    metrics.MINER_WEIGHT.clear()
    for uid, weight in zip(submission.uids, submission.weights, strict=True):
        metrics.MINER_WEIGHT.labels(str(uid)).set(weight)
