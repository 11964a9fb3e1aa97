"""Reading judged traces: outage judgments leave the score window; streams page by size (both backends)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy.orm import Session

from arena.inference import InferenceExchange
from judging.types import Judgment, ReasoningVerdict, Unscored
from storage.repository import iter_judged, save_judged, save_tasks, score_samples
from tests.storage.factories import Trace, hotkey, make_task, make_trace


def _save(session: Session, trace: Trace, **extra: Any) -> None:
    save_judged(
        session,
        episode=trace.episode,
        trajectory=trace.trajectory,
        tool_log=trace.tool_log,
        judgment=trace.judgment,
        **extra,
    )


def _with_reasoning(trace: Trace, **verdict: Any) -> Trace:
    data = trace.judgment.model_dump() | {"reasoning": ReasoningVerdict(**verdict), "content_hash": ""}
    return Trace(trace.episode, trace.trajectory, trace.tool_log, Judgment.model_validate(data))


def test_outage_judgments_leave_the_window_and_older_ones_fill_it(session: Session) -> None:
    task = make_task(1)
    save_tasks(session, tasks=[task])
    causes = [
        {"value": 0.5, "model": "m"},  # scored
        {"value": None, "unscored": Unscored(cause="disabled")},  # no judge configured: counts
        {"value": None, "unscored": Unscored(cause="skipped", detail="score is 0")},  # counts
        {"value": None, "model": "m", "unscored": Unscored(cause="timeout", detail="no reply within 60s")},
        {"value": None, "model": "m", "unscored": Unscored(cause="error", detail="ConnectError")},  # outage
        {"value": None, "model": "m", "unscored": Unscored(cause="unparseable", detail="not JSON")},  # outage
    ]
    traces = [
        _with_reasoning(make_trace(i, task=task, miner=0, score=0.1 * (i + 1)), **c)
        for i, c in enumerate(causes)
    ]
    assert [t.judgment.reasoning_outage for t in traces] == [False, False, False, True, True, True]
    for trace in traces:
        _save(session, trace)
    everything = score_samples(session, window=3)
    assert [s.score for s in everything] == [t.judgment.score for t in traces[-3:]]
    kept = score_samples(session, window=3, exclude_reasoning_outages=True)
    assert [s.score for s in kept] == [t.judgment.score for t in traces[:3]]
    assert {s.hotkey for s in kept} == {hotkey(0)}


def test_a_stream_pages_by_stored_size_as_well_as_by_count(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    import storage.traces

    task = make_task(2)
    save_tasks(session, tasks=[task])
    traces = [make_trace(100 + i, task=task) for i in range(5)]
    for trace in traces:
        save_judged(
            session,
            episode=trace.episode,
            trajectory=trace.trajectory,
            tool_log=trace.tool_log,
            judgment=trace.judgment,
        )
    one = max(len(json.dumps(t.trajectory.to_wire(), ensure_ascii=False)) for t in traces if t.trajectory)
    monkeypatch.setattr(storage.traces, "PAGE_CHARS", 2 * one + 1)  # two trajectories per page
    pages: list[int] = []
    real = storage.traces._page

    def counted(*args: Any) -> Any:
        page = real(*args)
        pages.append(len(page))
        return page

    monkeypatch.setattr(storage.traces, "_page", counted)
    streamed = [t.episode.episode_id for t in iter_judged(session, batch_size=500)]
    assert streamed == [t.episode.episode_id for t in traces]  # all of them, in order
    assert pages == [2, 2, 1]


def _judged_as(trace: Trace, axis: str) -> Trace:
    data = trace.judgment.model_dump() | {"axis": axis, "content_hash": ""}
    return Trace(trace.episode, trace.trajectory, trace.tool_log, Judgment.model_validate(data))


def test_gateway_faults_leave_the_window_and_attested_episodes_are_marked(session: Session) -> None:
    task = make_task(7)
    save_tasks(session, tasks=[task])
    traces = [_judged_as(make_trace(700 + i, task=task, miner=0, score=0.5), "A-attested") for i in range(3)]
    outcomes = ["ok", "gateway_error", "upstream_error"]
    for trace, outcome in zip(traces, outcomes, strict=True):
        at = trace.episode.started_at
        exchange = InferenceExchange(
            episode_id=trace.episode.episode_id,
            seq=0,
            upstream="http://model.example/v1",
            request="{}",
            response="{}",
            status=200 if outcome == "ok" else 500,
            outcome=outcome,  # type: ignore[arg-type]
            started_at=at,
            finished_at=at,
        )
        _save(session, trace, inference_log=[exchange])
    plain = make_trace(710, task=task, miner=0, score=0.5)
    _save(session, plain)
    everything = score_samples(session, window=10)
    assert [s.attested for s in everything] == [True, True, True, plain.judgment.axis == "A-attested"]
    kept = score_samples(session, window=10, exclude_gateway_faults=True)
    assert [s.order for s in kept] == [s.order for s in everything if s.order != everything[1].order]
