"""Validator and miners as real processes on loopback (local chain): rounds, storage, weights, restart."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from neurons.chain.local.state import read_weights
from neurons.demo.network import wait_for_reveals
from storage import repository
from storage.db import make_engine, make_sessionmaker
from storage.models import EpisodeRow, JudgmentRow
from storage.records import JudgedTrace
from tests.e2e.network import LocalNetwork, Process


@pytest.fixture
def net(tmp_path: Path) -> Iterator[LocalNetwork]:
    network = LocalNetwork(tmp_path / "net")
    try:
        yield network
    finally:
        network.stop()


def start_miners(net: LocalNetwork, good_agent: str = "scripted") -> None:
    miners = [
        net.start_miner("miner-good", good_agent, wait=False),
        net.start_miner("miner-bad", "tests.e2e.agents:failing_agent", wait=False),
    ]
    for miner in miners:
        miner.wait_healthy()


def run_once(net: LocalNetwork, **settings: Any) -> dict[str, Any]:
    """Run `arena validator --once --json` to completion; its JSON report."""
    process = net.start_validator("--once", "--json", **settings)
    code = process.wait(timeout=180)
    output = process.output()
    assert code == 0, output[-5000:]
    report: dict[str, Any] = json.loads(
        next(line for line in reversed(output.splitlines()) if line.startswith("{"))
    )
    return report


def traces(net: LocalNetwork) -> list[JudgedTrace]:
    engine = make_engine(net.db_url)
    try:
        with make_sessionmaker(engine)() as session:
            return list(repository.iter_judged(session))
    finally:
        engine.dispose()


def with_session(net: LocalNetwork) -> Session:
    return make_sessionmaker(make_engine(net.db_url))()


def test_a_round_is_judged_stored_and_weighted_on_chain(net: LocalNetwork) -> None:
    start_miners(net)
    report = run_once(net)

    assert report["failed"] == []
    assert report["round"]["stored"] == 6 and report["round"]["ends"] == {"completed": 3, "miner_error": 3}
    stored = traces(net)
    assert len(stored) == 6
    good, bad = net.hotkey("miner-good"), net.hotkey("miner-bad")
    for trace in stored:
        assert trace.judgment.episode_id == trace.episode.episode_id and trace.episode.round_id == 0
        if trace.episode.miner_hotkey == good:
            assert trace.episode.end == "completed" and trace.tool_log and trace.trajectory is not None
            assert trace.judgment.versions.catalog_version == trace.task.catalog_version
        else:
            assert trace.episode.miner_hotkey == bad
            assert trace.episode.end == "miner_error" and trace.judgment.score == 0
    assert sum(t.judgment.score for t in stored if t.episode.miner_hotkey == good) > 0

    # Commit-reveal is on, as on finney: the weights land when the local chain opens the commit.
    assert report["weights"]["success"] is True and report["weights"]["result"] == "submitted"
    assert report["weights"]["reveal_round"] is not None
    revealed = wait_for_reveals(net.chain, timeout=120.0)
    assert revealed is not None and revealed.status == "revealed", revealed
    weights = read_weights(net.chain)[net.uids["validator"]]
    assert weights.get(net.uids["miner-good"], 0) > weights.get(net.uids["miner-bad"], 0)


def _wait_round_open(net: LocalNetwork, validator: Process, round_id: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert validator.popen.poll() is None, validator.output()[-5000:]
        with with_session(net) as session:
            record = repository.get_round(session, round_id=round_id)
        if record is not None:
            assert record.closed_at is None, "the round finished before the test could interrupt it"
            return
        time.sleep(0.1)
    raise AssertionError(f"round {round_id} did not start:\n{validator.output()[-5000:]}")


def _stored(net: LocalNetwork) -> dict[str, str]:
    """Every stored episode id with its judgment's content hash."""
    with with_session(net) as session:
        rows = session.execute(
            select(EpisodeRow.episode_id, JudgmentRow.content_hash).outerjoin(
                JudgmentRow, JudgmentRow.episode_id == EpisodeRow.episode_id
            )
        ).all()
    return {episode_id: judgment for episode_id, judgment in rows}


@pytest.mark.slow  # heavy (tens of seconds on 2 cores): `make test-slow`
def test_a_validator_killed_mid_round_loses_nothing_and_serves_no_task_twice(net: LocalNetwork) -> None:
    start_miners(net, good_agent="tests.e2e.agents:slow_agent")  # answers after 4 s
    assert run_once(net)["round"]["stored"] == 6  # round 0, complete

    validator = net.start_validator()  # its first round starts a second after start-up
    _wait_round_open(net, validator, 1)
    time.sleep(1.5)  # the failing miner has answered, the slow one is still working
    before_kill = _stored(net)
    validator.stop(signal.SIGKILL)
    after_kill = _stored(net)
    assert after_kill == before_kill
    assert sum(1 for _ in after_kill) > 6, "some round-1 episodes were judged and stored before the kill"

    report = run_once(net)  # restart: recovers round 1, runs round 2
    assert report["round"]["round_id"] == 2 and report["round"]["stored"] == 6

    final = _stored(net)
    assert all(final[e] == h for e, h in after_kill.items()), "a judged trace was lost or changed"
    assert all(final.values()), "every stored episode has its judgment"
    with with_session(net) as session:
        rounds = [repository.get_round(session, round_id=r) for r in range(3)]
        assert all(r is not None and r.closed_at is not None for r in rounds)
        assert rounds[1].stats == {"result": "interrupted"}  # type: ignore[union-attr]
        served = [task_id for r in rounds for task_id in r.task_ids]  # type: ignore[union-attr]
        assert len(served) == len(set(served)) == 9, "a task was served twice"
        tasks = repository.get_tasks(session, task_ids=served)
        assert all(t.pool == "retired" for t in tasks.values())
        for trace in repository.iter_judged(session):
            record = rounds[trace.episode.round_id or 0]
            assert record is not None and trace.task.task_id in record.task_ids
