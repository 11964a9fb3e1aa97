"""Nothing judged is lost: a writer killed with SIGKILL at arbitrary points leaves only whole episodes."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import func, select, text

from storage.db import check_schema, make_engine, make_sessionmaker, upgrade
from storage.models import EpisodeRow, JudgmentRow, ToolLogRow
from storage.repository import iter_judged, open_round, save_judged, save_tasks
from tests.storage.factories import T0, VALIDATOR, make_task, make_trace, tool_calls

ROOT = Path(__file__).resolve().parents[2]
CYCLES = 6


def run_and_kill(url: str, first: int, rng: random.Random) -> set[str]:
    """Start a writer, let it commit a random number of episodes, SIGKILL it mid-stream."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.storage.writer", url, str(first)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    reported: set[str] = set()
    target = rng.randint(3, 40)
    for line in proc.stdout:
        reported.add(line.strip())
        if len(reported) >= target:
            break
    time.sleep(rng.uniform(0, 0.02))  # land the kill somewhere inside a later write
    proc.send_signal(signal.SIGKILL)
    out, err = proc.communicate(timeout=30)
    reported.update(line.strip() for line in out.splitlines() if line.strip())
    assert len(reported) >= target, f"writer died early: {err[-2000:]}"
    assert proc.returncode == -signal.SIGKILL
    return reported


def test_kill_9_leaves_only_whole_episodes_and_keeps_every_committed_one(db_url: str) -> None:
    engine = make_engine(db_url)
    upgrade(engine)
    task = make_task(1)
    maker = make_sessionmaker(engine)
    with maker() as session:
        save_tasks(session, tasks=[task])
        open_round(session, round_id=1, validator_hotkey=VALIDATOR, started_at=T0)
    engine.dispose()

    rng = random.Random(20260101)
    reported: set[str] = set()
    for cycle in range(CYCLES):
        reported |= run_and_kill(db_url, cycle * 1_000_000, rng)

    engine = make_engine(db_url)  # a fresh process's view of the database
    check_schema(engine)
    with engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
        orphans = [
            conn.execute(
                text(
                    f"SELECT count(*) FROM {child} WHERE episode_id NOT IN (SELECT episode_id FROM episodes)"
                )
            ).scalar()
            for child in ("tool_log", "judgments")
        ]
        assert orphans == [0, 0]
    with make_sessionmaker(engine)() as session:
        stored = {trace.episode.episode_id: trace for trace in iter_judged(session, batch_size=50)}
        n_episodes = session.scalar(select(func.count()).select_from(EpisodeRow))
        n_judgments = session.scalar(select(func.count()).select_from(JudgmentRow))
        n_logs = session.scalar(select(func.count()).select_from(ToolLogRow))
        assert reported <= set(stored), f"committed but lost: {sorted(reported - set(stored))[:5]}"
        assert n_episodes == n_judgments == len(stored)
        for episode_id, trace in stored.items():
            i = int(episode_id.removeprefix("ep-"))
            assert len(trace.tool_log) == tool_calls(i), episode_id
            assert trace.judgment.episode_id == episode_id
            if trace.trajectory is not None:
                assert len(trace.trajectory.tool_calls()) == tool_calls(i)
        assert n_logs == sum(len(t.tool_log) for t in stored.values())
        # The database is writable again (no stale lock left by the killed writer).
        trace = make_trace(9_999_999, task=task, round_id=1)
        assert save_judged(
            session,
            episode=trace.episode,
            trajectory=trace.trajectory,
            tool_log=trace.tool_log,
            judgment=trace.judgment,
        )
    engine.dispose()
