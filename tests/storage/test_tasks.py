"""Stored tasks: idempotent saves, pools, served and retired times, on both databases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.orm import Session

from storage.errors import MissingRecord, StorageError
from storage.models import TaskRow
from storage.repository import (
    get_task,
    get_tasks,
    mark_served,
    pool_counts,
    save_tasks,
    set_pool,
    tasks_in_pool,
)
from tests.storage.factories import T0, make_task


def test_every_intent_round_trips(session: Session) -> None:
    tasks = [
        make_task(i, intent=intent) for i, intent in enumerate(("product", "shop", "voucher", "knowledge"))
    ]
    assert save_tasks(session, tasks=tasks) == 4
    for task in tasks:
        assert get_task(session, task_id=task.task_id) == task
    assert get_tasks(session, task_ids=[t.task_id for t in tasks] + ["t-unknown"]) == {
        t.task_id: t for t in tasks
    }
    assert get_task(session, task_id="t-unknown") is None


def test_resaving_refreshes_bookkeeping_but_never_the_pool(session: Session) -> None:
    task = make_task(1)
    save_tasks(session, tasks=[task], now=T0)
    set_pool(session, task_ids=[task.task_id], pool="retired", at=T0)
    again = task.model_copy(update={"leak_cluster": "c-new", "pool": "held_out"})
    assert save_tasks(session, tasks=[again, again]) == 0
    stored = get_task(session, task_id=task.task_id)
    assert stored is not None
    assert stored.leak_cluster == "c-new" and stored.pool == "retired"
    row = session.get(TaskRow, task.task_id)
    assert row is not None and row.created_at == T0


def test_pools_move_whole_sets_and_stamp_retirement(session: Session) -> None:
    tasks = [make_task(i) for i in range(6)]
    save_tasks(session, tasks=tasks)
    ids = sorted(t.task_id for t in tasks)
    assert set_pool(session, task_ids=ids[:2], pool="practice") == 2
    assert [t.task_id for t in tasks_in_pool(session, pool="practice")] == ids[:2]
    assert [t.task_id for t in tasks_in_pool(session, pool="held_out")] == ids[2:]
    assert len(tasks_in_pool(session, pool="held_out", limit=3)) == 3
    first, later = T0, T0 + timedelta(days=1)
    set_pool(session, task_ids=ids[4:], pool="retired", at=first)
    set_pool(session, task_ids=ids[4:], pool="retired", at=later)
    row = session.get(TaskRow, ids[4])
    assert row is not None and row.retired_at == first
    assert pool_counts(session) == {"practice": 2, "held_out": 2, "retired": 2, "never_touch": 0}


def test_unknown_tasks_or_pools_move_nothing(session: Session) -> None:
    task = make_task(1)
    save_tasks(session, tasks=[task])
    with pytest.raises(MissingRecord, match="not stored"):
        set_pool(session, task_ids=[task.task_id, "t-unknown"], pool="retired")
    with pytest.raises(StorageError, match="unknown pool"):
        set_pool(session, task_ids=[task.task_id], pool="trash")  # type: ignore[arg-type]
    with pytest.raises(MissingRecord):
        mark_served(session, task_ids=["t-unknown"])
    stored = get_task(session, task_id=task.task_id)
    assert stored is not None and stored.pool == "held_out"


def test_served_time_keeps_the_first_serve(session: Session) -> None:
    task = make_task(1)
    save_tasks(session, tasks=[task])
    assert mark_served(session, task_ids=[task.task_id], at=T0) == 1
    mark_served(session, task_ids=[task.task_id], at=datetime.now(UTC))
    row = session.get(TaskRow, task.task_id)
    assert row is not None and row.served_at == T0


def test_many_tasks_in_one_call(session: Session) -> None:
    tasks = [make_task(i) for i in range(1200)]  # more than one IN (...) chunk
    assert save_tasks(session, tasks=tasks) == 1200
    assert set_pool(session, task_ids=[t.task_id for t in tasks], pool="practice") == 1200
    assert pool_counts(session)["practice"] == 1200
