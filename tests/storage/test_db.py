"""Engines, sessions and write transactions on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from storage.db import make_engine, make_sessionmaker, upgrade, write_transaction
from storage.errors import StorageError
from storage.models import RoundRow
from storage.repository import count_judged, save_judged, save_tasks
from tests.storage.factories import make_task, make_trace


def test_sqlite_connections_are_durable_and_checked(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'a.db'}")
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30_000
    engine.dispose()


def test_postgres_urls_use_psycopg_3() -> None:
    for url in ("postgresql://u@h/db", "postgres://u@h/db", "postgresql+psycopg2://u@h/db"):
        assert make_engine(url).url.drivername == "postgresql+psycopg"


def test_other_databases_are_refused() -> None:
    with pytest.raises(StorageError, match="unsupported database URL"):
        make_engine("mysql://u:secret@h/db")


def test_write_transaction_commits_or_rolls_back_everything(engine: Engine) -> None:
    started = datetime(2026, 1, 1, tzinfo=UTC)
    with Session(engine) as session:
        with pytest.raises(RuntimeError), write_transaction(session, what="test"):
            session.add(RoundRow(round_id=1, validator_hotkey="v", task_ids=[], started_at=started))
            session.flush()
            raise RuntimeError("boom")
        with write_transaction(session, what="test"):
            session.add(RoundRow(round_id=2, validator_hotkey="v", task_ids=[], started_at=started))
        with (
            pytest.raises(StorageError, match="could not write test"),
            write_transaction(session, what="test"),
        ):
            session.add(RoundRow(round_id=2, validator_hotkey="dup", task_ids=[], started_at=started))
        ids = session.execute(text("SELECT round_id FROM rounds")).scalars().all()
    assert ids == [2]


def test_naive_datetimes_never_reach_the_database(engine: Engine) -> None:
    with Session(engine) as session, pytest.raises(StorageError, match="naive datetime"):
        with write_transaction(session, what="round"):
            session.add(
                RoundRow(round_id=1, validator_hotkey="v", task_ids=[], started_at=datetime(2026, 1, 1))
            )


def test_concurrent_writers_all_succeed(engine: Engine) -> None:
    """Several threads, one session each, writing at once: no lost write, no 'database is locked'."""
    task = make_task(1)
    maker = make_sessionmaker(engine)
    with maker() as session:
        save_tasks(session, tasks=[task])
    errors: list[BaseException] = []

    def writer(offset: int) -> None:
        try:
            with maker() as session:
                for i in range(offset, offset + 15):
                    trace = make_trace(i, task=task)
                    save_judged(
                        session,
                        episode=trace.episode,
                        trajectory=trace.trajectory,
                        tool_log=trace.tool_log,
                        judgment=trace.judgment,
                    )
                    # Interleave reads, which must not block or break other writers.
                    count_judged(session)
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k * 1000,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with maker() as session:
        assert count_judged(session) == 60


def test_upgrade_is_idempotent_on_a_live_database(engine: Engine) -> None:
    assert upgrade(engine) == upgrade(engine)
