"""The task pool: refilled (generate, cluster, assign pools, audit, store), drawn per round, and burned.

Deterministic from the stored tasks and the validator's secret: the generator's seed is
``HMAC(secret, "arena.generate/1:<number of stored tasks>")``, so the same store and secret give
the same new tasks, and an outsider cannot predict them. New tasks are clustered together with
every stored task (retired and practice ones included: a fresh task that near-duplicates a
served or published one is as leaked as they are), whole pool groups are reconciled and shared
out (``arena.pools.assign_pools``), and nothing is stored unless the audit over all tasks passes.

A round's tasks are drawn with ``arena.rotation.draw_round`` and burned (marked served and
retired with their pool groups) before any of them is sent: see ``open_and_burn``.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy.orm import Session

from arena.audit import audit
from arena.clusters import cluster_tasks
from arena.generate import GenerateConfig, generate_tasks, make_finder
from arena.index import SearchIndex
from arena.pools import assign_pools
from arena.rotation import draw_round, retire
from arena.types import POOLS, Pool, Task
from neurons import metrics
from neurons.errors import NeuronError
from neurons.validator.settings import PoolConfig
from storage import repository

logger = logging.getLogger(__name__)

_SEED_LABEL = b"arena.generate/1:"


class TaskAuditFailed(NeuronError):
    """The audit over the stored and the new tasks found a cross-pool leak; nothing was stored."""


@dataclass(frozen=True)
class ReplenishReport:
    """What one rotation pass did."""

    pools: dict[str, int]
    generated: int = 0
    stored: int = 0
    moved: int = 0


def generation_seed(secret: bytes, stored: int) -> int:
    """The generator seed for a store holding ``stored`` tasks (64 bits of an HMAC under the secret)."""
    digest = hmac.new(secret, _SEED_LABEL + str(stored).encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big")


def all_tasks(session: Session) -> list[Task]:
    """Every stored task, pool by pool, each pool in task-id order."""
    return [task for pool in POOLS for task in repository.tasks_in_pool(session, pool=pool)]


def export_pool_sizes(counts: dict[str, int]) -> None:
    """Set ``arena_task_pool_size`` for every pool."""
    for pool in POOLS:
        metrics.TASK_POOL_SIZE.labels(pool).set(counts.get(pool, 0))


def replenish(session: Session, index: SearchIndex, *, secret: bytes, config: PoolConfig) -> ReplenishReport:
    """Refill the held-out pool when it is below ``min_held_out`` (a no-op otherwise).

    Blocking (generation, clustering and the audit are CPU work): run it in a thread.

    Raises:
        TaskAuditFailed: the audit found a cross-pool leak (nothing is stored).
        InvalidTask: the index is empty.
    """
    counts = repository.pool_counts(session)
    export_pool_sizes(counts)
    if counts["held_out"] >= config.min_held_out:
        return ReplenishReport(pools=counts)
    stored = all_tasks(session)
    seed = generation_seed(secret, len(stored))
    avoid = {item.product_id for task in stored for item in task.gold}
    finder = make_finder(index) if config.findable else None
    fresh, report = generate_tasks(
        index,
        n=config.batch,
        seed=seed,
        config=GenerateConfig(intents=config.intents),
        finder=finder,
        avoid_product_ids=avoid,
    )
    known = {task.task_id for task in stored}
    fresh = [task for task in fresh if task.task_id not in known]
    if not fresh:
        logger.warning(
            "tasks_not_generated held_out=%d draws=%d rejected=%s",
            counts["held_out"],
            report.draws,
            dict(report.rejected),
        )
        return ReplenishReport(pools=counts)
    clustered, _ = cluster_tasks([*stored, *fresh])
    pooled = assign_pools(
        clustered, practice=config.practice_share, never_touch=config.never_touch_share, seed=f"{seed:016x}"
    )
    checked = audit(pooled)
    if not checked.ok:
        raise TaskAuditFailed(
            f"{checked.violation_count} cross-pool violations, e.g. {checked.violations[:1]}"
        )
    moved = _store(session, stored, pooled)
    counts = repository.pool_counts(session)
    export_pool_sizes(counts)
    logger.info("tasks_replenished generated=%d moved=%d held_out=%d seed=%016x", len(fresh), moved,
                counts["held_out"], seed)  # fmt: skip
    return ReplenishReport(pools=counts, generated=len(fresh), stored=len(fresh), moved=moved)


def _store(session: Session, stored: Sequence[Task], pooled: Sequence[Task]) -> int:
    """Insert the new tasks and update the stored ones whose cluster or pool changed; return the moves."""
    before = {task.task_id: task for task in stored}
    changed = [
        t for t in pooled if t.task_id not in before or t.leak_cluster != before[t.task_id].leak_cluster
    ]
    repository.save_tasks(session, tasks=changed)  # new tasks go in with their pool; clusters refreshed
    moves: dict[Pool, list[str]] = {}
    for task in pooled:
        old = before.get(task.task_id)
        if old is not None and old.pool != task.pool:
            moves.setdefault(task.pool, []).append(task.task_id)
    for pool, ids in moves.items():
        repository.set_pool(session, task_ids=ids, pool=pool)
    return sum(len(ids) for ids in moves.values())


def burn(session: Session, *, task_ids: Sequence[str]) -> int:
    """Mark tasks served and retire them with their pool groups among the held-out tasks.

    Idempotent, so recovery can repeat it. Only the held-out pool is regrouped: it is the only
    pool rounds draw from, so that is where a leak partner left behind could be served later.

    Returns:
        How many tasks were retired (served ones included).
    """
    if not task_ids:
        return 0
    repository.mark_served(session, task_ids=task_ids)
    held_out = repository.tasks_in_pool(session, pool="held_out")
    held_ids = {t.task_id for t in held_out}
    served = [task_id for task_id in task_ids if task_id in held_ids]
    retired = {t.task_id for t in retire(held_out, served) if t.pool == "retired"} if served else set()
    # A served task outside held_out (already retired by an earlier pass) is retired regardless.
    ids = sorted(retired | (set(task_ids) - held_ids))
    repository.set_pool(session, task_ids=ids, pool="retired")
    return len(ids)


def open_and_burn(
    session: Session, *, round_id: int, secret: bytes, n: int, validator_hotkey: str, block: int | None
) -> list[Task]:
    """Draw a round's tasks, record the round, and burn the tasks (all before anything is sent)."""
    held_out = repository.tasks_in_pool(session, pool="held_out")
    drawn = draw_round(held_out, secret=secret, round_number=round_id, n=n)
    if not drawn:
        return []
    _record_round(session, round_id, validator_hotkey, block, [t.task_id for t in drawn])
    return drawn


def world_draw_order(pack_hash: str, tasks: Sequence[Task]) -> list[Task]:
    """A pack's tasks in the order a validator serves them: by sha256(pack hash || task id).

    Public on purpose: the pack is unknown until the validator reveals its round secret, and an
    auditor then checks that the tasks served were the first in this order, not picked.
    """
    return sorted(tasks, key=lambda t: hashlib.sha256(f"{pack_hash}:{t.task_id}".encode()).digest())


def open_world_round(
    session: Session,
    *,
    round_id: int,
    pack_hash: str,
    tasks: Sequence[Task],
    n: int,
    validator_hotkey: str,
    block: int | None,
) -> list[Task]:
    """Draw a world round's tasks from its pack, store them served and retired, and record the round.

    The first ``n`` of the pack's tasks (``world_draw_order``) this validator has not served yet:
    validators with the same cadence serve identical tasks. They never enter the held-out pool,
    so a static round can never draw them; a pack whose tasks are all served gives none.
    """
    ordered = world_draw_order(pack_hash, tasks)
    stored = repository.get_tasks(session, task_ids=[t.task_id for t in ordered])
    fresh = [t for t in ordered if t.task_id not in stored or stored[t.task_id].pool != "retired"]
    drawn = fresh[:n]
    if not drawn:
        return []
    repository.save_tasks(session, tasks=[t.model_copy(update={"pool": "retired"}) for t in drawn])
    _record_round(session, round_id, validator_hotkey, block, [t.task_id for t in drawn])
    return drawn


def _record_round(
    session: Session, round_id: int, validator_hotkey: str, block: int | None, ids: list[str]
) -> None:
    """Record the round with its tasks and burn them (before anything is sent)."""
    repository.open_round(
        session,
        round_id=round_id,
        validator_hotkey=validator_hotkey,
        started_at=datetime.now(UTC),
        block=block,
        task_ids=ids,
    )
    burn(session, task_ids=ids)
