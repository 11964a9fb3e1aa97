"""One validator round (``run_round``): pick miners, burn held-out tasks, query, judge, store.

The order matters for restarts. Tasks are drawn, the round is recorded with their ids, and the
tasks are marked served and retired (with their pool groups) *before* any is sent, so a crash
can never let a task be served twice. Each episode is judged and stored in one transaction as
soon as its reply arrives, so a crash loses no judged trace; an episode still in flight at a
crash is dropped (never judged, never scored: our fault, not the miner's), and the next start
closes the interrupted round (``recover_round``).

A miner's refusal that names our own state (``no_permit``, ``unknown_hotkey``, ``stale``,
``wrong_receiver``), or says it cannot read the chain (503 ``metagraph_expired`` or
``metagraph_unavailable``: an outage of the chain endpoint miners read shows so from every
miner), is held, not judged, until the round decides whose fault it is. A claim about our state,
or a quorum of held replies (half the round's miners, at least two), runs our self-check; when
it fails the fault is ours and the round stops sending. At the end the held replies stay
unscored (no episode stored, no zero) and the round closes as ``stopped`` (alerted) when the
self-check failed, or when a quorum held replies and no miner admitted a single request of ours
(a 200 answer): a clock off by less than a block passes the self-check, and a chain outage is
not ours to check. Otherwise the claims are the claimants' own, and their held replies are judged
and stored as the ``miner_error`` zeros they are: a colluding half of a round cannot escape its
tasks by refusing them in our name while another miner takes ours.

A world round (``world`` given, ``neurons.validator.worlds``) draws its tasks from the world's
pack instead of the held-out pool (``open_world_round``: the same tasks on every validator with
the same cadence), and its episodes run on that world; the summary names it.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy.orm import Session

from arena.rotation import round_key
from judging.types import Judgment
from neurons import metrics
from neurons.chain.chaintypes import MetagraphSnapshot, Neuron
from neurons.validator.counting import verdict
from neurons.validator.episodes import Episodes, Held, Querier, RoundDeps, refusal_quorum
from neurons.validator.settings import RoundConfig
from neurons.validator.taskpool import burn, open_and_burn, open_world_round
from neurons.validator.worlds import RoundWorld
from storage import repository
from storage.db import in_session
from storage.records import RoundRecord

logger = logging.getLogger(__name__)

__all__ = [
    "Querier",
    "RoundDeps",
    "RoundSummary",
    "next_round_id",
    "pick_miners",
    "recover_round",
    "refusal_quorum",
    "run_round",
    "verdict",
]

RoundResult = Literal[
    "ok", "partial", "stopped", "refused", "no_miners", "no_tasks", "no_world", "no_commitment"
]
"""``stopped``: miners refused us in our own name or could not read the chain, and the round held it
not theirs (the module docstring); ``refused``: our self-check failed first; ``no_world``: world
rounds are on and the world's seed block is not final yet; ``no_commitment``: our round secret
was not committed on chain before the world's seed block (a first start, a new secret: the
anchor is sent and the next world runs)."""


@dataclass
class RoundSummary:
    """What a round did; also the ``stats`` stored when the round is closed."""

    round_id: int | None
    result: RoundResult
    miners: int = 0
    tasks: int = 0
    stored: int = 0  # episodes judged and stored
    not_sent: int = 0  # our overload: never sent, never judged
    failed: int = 0  # our faults while judging or storing (logged with traceback)
    unscored: int = 0  # held replies of a stopped round: never judged, never scored
    refusals: dict[str, int] = field(default_factory=dict)  # those refusals, by reason
    ends: dict[str, int] = field(default_factory=dict)
    successes: int = 0
    seconds: float = 0.0
    world: dict[str, Any] | None = None  # the world round's pack (``world_stats``); None: static tasks

    def stats(self) -> dict[str, Any]:
        """The JSON-able summary stored with the round."""
        return {
            "world": self.world,
            "result": self.result,
            "miners": self.miners,
            "tasks": self.tasks,
            "stored": self.stored,
            "not_sent": self.not_sent,
            "failed": self.failed,
            "unscored": self.unscored,
            "refusals": dict(sorted(self.refusals.items())),
            "ends": dict(sorted(self.ends.items())),
            "successes": self.successes,
            "seconds": round(self.seconds, 3),
        }


def world_stats(world: RoundWorld) -> dict[str, Any]:
    """What a round's summary says of its world: the pack's identity and where its seed came from."""
    return {
        "world_id": world.world_id,
        "pack_hash": world.pack_hash,
        "round": world.at.index,
        "seed_block": world.at.seed_block,
        "block_hash": world.block_hash,
        "source": world.source,
    }


def pick_miners(snapshot: MetagraphSnapshot, *, self_hotkey: str, n: int, key: bytes) -> list[Neuron]:
    """Choose the miners a round queries: serving, registered, neither us nor the subnet owner.

    With more eligible miners than ``n``, a uniform sample keyed by the round: miners are ordered
    by ``HMAC(key, hotkey)`` and the first ``n`` taken, so the choice is reproducible by the
    operator and unpredictable to miners. Returned in uid order.
    """
    eligible = [
        neuron
        for neuron in snapshot.neurons
        if neuron.endpoint and neuron.hotkey != self_hotkey and neuron.uid != snapshot.owner_uid
    ]
    if 0 < n < len(eligible):
        eligible.sort(key=lambda m: hmac.new(key, m.hotkey.encode(), hashlib.sha256).digest())
        eligible = eligible[:n]
    return sorted(eligible, key=lambda m: m.uid)


def next_round_id(session: Session) -> int:
    """The round after the last one stored (0 on a fresh database)."""
    last = repository.last_round(session)
    return 0 if last is None else last.round_id + 1


def recover_round(session: Session) -> RoundRecord | None:
    """Close the last round if a crash left it open: burn its tasks again (idempotent) and mark it.

    Its episodes already stored stay as they are; those that were in flight are gone (the tool
    server's registry was in memory) and are never judged or scored.

    Returns:
        The interrupted round, or None when there was none.
    """
    last = repository.last_round(session)
    if last is None or last.closed_at is not None:
        return None
    burn(session, task_ids=last.task_ids)
    repository.close_round(
        session, round_id=last.round_id, closed_at=datetime.now(UTC), stats={"result": "interrupted"}
    )
    logger.warning("round_recovered round=%d tasks=%d", last.round_id, len(last.task_ids))
    return last


async def run_round(
    deps: RoundDeps,
    config: RoundConfig,
    snapshot: MetagraphSnapshot,
    *,
    round_id: int,
    world: RoundWorld | None = None,
) -> RoundSummary:
    """Run round ``round_id`` against the miners of ``snapshot`` (see the module docstring).

    With ``world``, the tasks are the world pack's and the episodes run on its overlay.

    No round is recorded (and the id is not used up) when there is no miner or no task.

    Raises:
        StorageError: opening or closing the round failed (the job retries; recovery closes it).
    """
    started = time.monotonic()
    miners = pick_miners(
        snapshot,
        self_hotkey=deps.validator_hotkey,
        n=config.miners_per_round,
        key=round_key(deps.draw_secret, round_id),
    )
    if not miners:
        logger.warning("round_skipped round=%d reason=no_miners neurons=%d", round_id, len(snapshot.neurons))
        return RoundSummary(round_id=None, result="no_miners")
    if world is None:
        tasks = await asyncio.to_thread(
            in_session,
            deps.sessions,
            open_and_burn,
            round_id=round_id,
            secret=deps.draw_secret,
            n=config.tasks_per_round,
            validator_hotkey=deps.validator_hotkey,
            block=snapshot.block,
        )
    else:
        tasks = await asyncio.to_thread(
            in_session,
            deps.sessions,
            open_world_round,
            round_id=round_id,
            pack_hash=world.pack_hash,
            tasks=[compiled.task for compiled in world.pack.tasks],
            n=config.tasks_per_round,
            validator_hotkey=deps.validator_hotkey,
            block=snapshot.block,
        )
    described = world_stats(world) if world is not None else None
    if not tasks:
        logger.warning(
            "round_skipped round=%d reason=%s", round_id, "no_tasks" if world is None else "world_spent"
        )
        return RoundSummary(round_id=None, result="no_tasks", miners=len(miners), world=described)
    summary = RoundSummary(
        round_id=round_id, result="ok", miners=len(miners), tasks=len(tasks), world=described
    )
    logger.info(
        "round_start round=%d miners=%d tasks=%d block=%d world=%s",
        round_id,
        len(miners),
        len(tasks),
        snapshot.block,
        world.world_id if world is not None else "none",
    )
    episodes = Episodes(deps, config, round_id, miners=len(miners), world=world)
    outcomes = await asyncio.gather(
        *(episodes.run(miner, task) for task in tasks for miner in miners), return_exceptions=True
    )
    held = [outcome for outcome in outcomes if isinstance(outcome, Held)]
    for outcome in outcomes:
        if not isinstance(outcome, Held):
            _tally(summary, outcome)
    unscored_because = episodes.unscored_because()
    if unscored_because is not None:
        _unscore(summary, held, round_id, unscored_because)
    else:
        settled = await asyncio.gather(*(episodes.settle(h) for h in held), return_exceptions=True)
        for judged in settled:
            _tally(summary, judged)
    deps.registry.prune()
    summary.seconds = time.monotonic() - started
    if summary.failed or summary.not_sent:
        summary.result = "partial"
    if unscored_because is not None:
        summary.result = "stopped"
    await asyncio.to_thread(
        in_session,
        deps.sessions,
        repository.close_round,
        round_id=round_id,
        closed_at=datetime.now(UTC),
        stats=summary.stats(),
    )
    metrics.ROUNDS.labels(summary.result).inc()
    metrics.ROUND_DURATION.observe(summary.seconds)
    logger.info(
        "round_done round=%d result=%s stored=%d successes=%d not_sent=%d failed=%d seconds=%.2f",
        round_id,
        summary.result,
        summary.stored,
        summary.successes,
        summary.not_sent,
        summary.failed,
        summary.seconds,
    )
    return summary


def _unscore(summary: RoundSummary, held: list[Held], round_id: int, why: str) -> None:
    summary.unscored = len(held)
    for h in held:
        reason = h.reply.refusal or "unknown"
        summary.refusals[reason] = summary.refusals.get(reason, 0) + 1
    logger.error(
        "round_stopped round=%d unscored=%d refusals=%s detail=%s",
        round_id,
        len(held),
        ",".join(f"{k}:{v}" for k, v in sorted(summary.refusals.items())),
        why,
    )


def _tally(summary: RoundSummary, outcome: Judgment | None | BaseException) -> None:
    if isinstance(outcome, BaseException):
        summary.failed += 1
        logger.error("episode_failed error=%s", type(outcome).__name__, exc_info=outcome)
    elif outcome is None:
        summary.not_sent += 1
    else:
        summary.stored += 1
        summary.successes += int(outcome.success)
        summary.ends[outcome.end] = summary.ends.get(outcome.end, 0) + 1
