"""Stored tasks: save (idempotent on the content-addressed task id), pools, served and retired times.

A task's definition never changes (its id is a hash of it); its bookkeeping does. ``pool``
moves only through ``set_pool``, so re-importing a task file can never put a retired task
back into the held-out pool.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from sqlalchemy import func, literal, select, update
from sqlalchemy.orm import Session

from arena.types import POOLS, Pool, Task
from storage.db import write_transaction
from storage.errors import MissingRecord, StorageError
from storage.mapping import TASK_COLUMNS, row_to_task, task_to_row
from storage.models import TaskRow, UTCDateTime

logger = logging.getLogger(__name__)

IN_CHUNK = 500


def _chunks(ids: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(ids), IN_CHUNK):
        yield ids[start : start + IN_CHUNK]


def save_tasks(session: Session, *, tasks: Iterable[Task], now: datetime | None = None) -> int:
    """Store tasks in one transaction: new ones are inserted, stored ones get their bookkeeping refreshed.

    Refreshed: leak cluster, difficulty, catalog and generator versions, source. Never the pool
    (see ``set_pool``) nor the created/served/retired times.

    Returns:
        How many tasks were new.
    """
    by_id = {task.task_id: task for task in tasks}  # the last copy of a repeated task wins
    now = now or datetime.now(UTC)
    inserted = 0
    with write_transaction(session, what=f"{len(by_id)} tasks"):
        for chunk in _chunks(sorted(by_id)):
            stored = {
                row.task_id: row for row in session.scalars(select(TaskRow).where(TaskRow.task_id.in_(chunk)))
            }
            for task_id in chunk:
                task, row = by_id[task_id], stored.get(task_id)
                if row is None:
                    session.add(task_to_row(task, now=now))
                    inserted += 1
                    continue
                for name in TASK_COLUMNS:
                    if name != "pool":
                        setattr(row, name, getattr(task, name))
                row.task = task.model_dump(mode="json") | {"pool": row.pool}
            session.flush()
    logger.info("tasks saved new=%d total=%d", inserted, len(by_id))
    return inserted


def _require_tasks(session: Session, task_ids: Sequence[str]) -> None:
    missing: list[str] = []
    for chunk in _chunks(task_ids):
        found = set(session.scalars(select(TaskRow.task_id).where(TaskRow.task_id.in_(chunk))))
        missing += [task_id for task_id in chunk if task_id not in found]
    if missing:
        raise MissingRecord(f"{len(missing)} task(s) not stored, e.g. {missing[:5]}")


def set_pool(session: Session, *, task_ids: Iterable[str], pool: Pool, at: datetime | None = None) -> int:
    """Move tasks to ``pool``; moving to ``retired`` stamps ``retired_at`` (first time only).

    Returns:
        How many tasks were moved (including those already in ``pool``).

    Raises:
        MissingRecord: some task is not stored (nothing is moved).
        StorageError: an unknown pool name.
    """
    if pool not in POOLS:
        raise StorageError(f"unknown pool {pool!r}; pools are {POOLS}")
    ids = sorted(set(task_ids))
    at = at or datetime.now(UTC)
    with write_transaction(session, what=f"pool of {len(ids)} tasks"):
        _require_tasks(session, ids)
        for chunk in _chunks(ids):
            retired_at = (
                func.coalesce(TaskRow.retired_at, literal(at, UTCDateTime())) if pool == "retired" else None
            )
            session.execute(
                update(TaskRow).where(TaskRow.task_id.in_(chunk)).values(pool=pool, retired_at=retired_at)
            )
    logger.info("tasks moved pool=%s n=%d", pool, len(ids))
    return len(ids)


def mark_served(session: Session, *, task_ids: Iterable[str], at: datetime | None = None) -> int:
    """Record that tasks were served to miners (``served_at`` keeps the first time).

    Raises:
        MissingRecord: some task is not stored (nothing is marked).
    """
    ids = sorted(set(task_ids))
    at = at or datetime.now(UTC)
    with write_transaction(session, what=f"served time of {len(ids)} tasks"):
        _require_tasks(session, ids)
        for chunk in _chunks(ids):
            session.execute(
                update(TaskRow)
                .where(TaskRow.task_id.in_(chunk))
                .values(served_at=func.coalesce(TaskRow.served_at, literal(at, UTCDateTime())))
            )
    return len(ids)


def get_task(session: Session, *, task_id: str) -> Task | None:
    """Return a stored task, or None."""
    row = session.get(TaskRow, task_id)
    return None if row is None else row_to_task(row)


def get_tasks(session: Session, *, task_ids: Iterable[str]) -> dict[str, Task]:
    """Return the stored tasks among ``task_ids``, by id (unknown ids are absent)."""
    result: dict[str, Task] = {}
    for chunk in _chunks(sorted(set(task_ids))):
        for row in session.scalars(select(TaskRow).where(TaskRow.task_id.in_(chunk))):
            result[row.task_id] = row_to_task(row)
    return result


def tasks_in_pool(session: Session, *, pool: Pool, limit: int | None = None) -> list[Task]:
    """Return the tasks in ``pool``, ordered by task id (a stable order for deterministic draws)."""
    query = select(TaskRow).where(TaskRow.pool == pool).order_by(TaskRow.task_id)
    if limit is not None:
        query = query.limit(limit)
    return [row_to_task(row) for row in session.scalars(query)]


def pool_counts(session: Session) -> dict[str, int]:
    """Return how many tasks each pool holds (every pool present, zero where empty)."""
    counts: dict[str, int] = dict.fromkeys(POOLS, 0)
    for pool, n in session.execute(select(TaskRow.pool, func.count()).group_by(TaskRow.pool)):
        counts[pool] = int(n)
    return counts
