"""The repository on SQLite and PostgreSQL: round trips, idempotence, one-transaction writes, streaming."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from pydantic import ValidationError
from sqlalchemy import Engine, event, func, select
from sqlalchemy.orm import Session

import storage.repository as repository
from arena.inference import InferenceExchange
from arena.types import Message, Task, content_hash, result_hash
from judging.types import Judgment
from storage.bounds import MAX_STORED_TRAJECTORY_CHARS
from storage.errors import ConflictError, MissingRecord, StorageError, UnstorableContent
from storage.mapping import episode_content_hash
from storage.models import EpisodeRow, JudgmentRow, TaskRow, ToolLogRow
from storage.records import EpisodeRecord
from storage.repository import (
    count_judged,
    episodes_for_hotkey_window,
    get_judged,
    iter_judged,
    judged_since,
    open_round,
    save_judged,
    save_tasks,
    score_samples,
)
from tests.storage.factories import T0, VALIDATOR, Trace, hotkey, make_task, make_trace, tool_calls


def save(session: Session, trace: Trace, **extra: Any) -> bool:
    return save_judged(
        session,
        episode=trace.episode,
        trajectory=trace.trajectory,
        tool_log=trace.tool_log,
        judgment=trace.judgment,
        **extra,
    )


def counts(session: Session) -> tuple[int, int, int]:
    rows = tuple(
        int(session.scalar(select(func.count()).select_from(model)) or 0)
        for model in (EpisodeRow, ToolLogRow, JudgmentRow)
    )
    session.rollback()
    return rows[0], rows[1], rows[2]


@pytest.fixture()
def task(session: Session) -> Task:
    task = make_task(1)
    save_tasks(session, tasks=[task])
    open_round(
        session, round_id=7, validator_hotkey=VALIDATOR, started_at=T0, block=100, task_ids=[task.task_id]
    )
    return task


def test_save_judged_round_trips_every_part(session: Session, task: Task) -> None:
    trace = make_trace(3, task=task, round_id=7)
    assert save(session, trace) is True
    stored = get_judged(session, episode_id=trace.episode.episode_id)
    assert stored is not None
    assert stored.episode == trace.episode
    assert stored.task == task
    assert stored.trajectory == trace.trajectory
    assert stored.tool_log == trace.tool_log
    assert stored.judgment == trace.judgment
    assert stored.judgment.content_hash == trace.judgment.content_hash
    assert stored.stored_at.tzinfo is not None
    assert get_judged(session, episode_id="ep-missing") is None


def test_unanswered_episode_round_trips_without_trajectory(session: Session, task: Task) -> None:
    trace = make_trace(4, task=task, round_id=7, answered=False)
    assert trace.trajectory is None
    assert save(session, trace)
    stored = get_judged(session, episode_id=trace.episode.episode_id)
    assert stored is not None and stored.trajectory is None
    assert stored.episode.end == "timeout" and stored.judgment.rejects == ("no_final_action",)
    assert stored.tool_log == trace.tool_log


def test_retried_write_changes_nothing(session: Session, engine: Engine, task: Task) -> None:
    trace = make_trace(5, task=task, round_id=7)
    assert save(session, trace) is True
    before = counts(session)
    assert save(session, trace) is False
    # A retry from another process (a fresh session) is recognised the same way.
    with Session(engine) as other:
        assert save(other, trace) is False
    assert counts(session) == before == (1, tool_calls(5), 1)


def test_same_episode_id_with_other_content_is_a_conflict(session: Session, task: Task) -> None:
    trace = make_trace(6, task=task, round_id=7)
    save(session, trace)
    other_messages = (*trace.trajectory.messages[:-1], Message(role="assistant", content="changed"))  # type: ignore[union-attr]
    changed_trajectory = trace.trajectory.model_copy(update={"messages": other_messages})  # type: ignore[union-attr]
    with pytest.raises(ConflictError, match="other content"):
        save_judged(
            session,
            episode=trace.episode,
            trajectory=changed_trajectory,
            tool_log=trace.tool_log,
            judgment=trace.judgment,
        )
    rejudged = Judgment.model_validate(trace.judgment.model_dump() | {"score": 0.01, "content_hash": ""})
    with pytest.raises(ConflictError, match="already judged"):
        save(session, Trace(trace.episode, trace.trajectory, trace.tool_log, rejudged))
    stored = get_judged(session, episode_id=trace.episode.episode_id)
    assert stored is not None and stored.trajectory == trace.trajectory and stored.judgment == trace.judgment


def test_failing_tool_log_entry_leaves_nothing_half_written(session: Session, task: Task) -> None:
    trace = make_trace(7, task=task, round_id=7)
    # A duplicate (episode, seq) violates the tool log's primary key after the episode row went in.
    bad_log = (*trace.tool_log, trace.tool_log[2])
    with pytest.raises(StorageError, match="could not write episode"):
        save(session, Trace(trace.episode, trace.trajectory, bad_log, trace.judgment))
    assert counts(session) == (0, 0, 0)
    assert save(session, trace) is True
    assert counts(session) == (1, tool_calls(7), 1)


def test_failing_judgment_leaves_nothing_half_written(
    session: Session, task: Task, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = make_trace(8, task=task, round_id=7)
    original = repository.judgment_to_row

    def out_of_range(judgment: Judgment, *, now: datetime, **world: str | None) -> JudgmentRow:
        row = original(judgment, now=now, **world)
        row.score = 2.0  # the database's CHECK constraint refuses it, after episode and log went in
        return row

    monkeypatch.setattr(repository, "judgment_to_row", out_of_range)
    with pytest.raises(StorageError):
        save(session, trace)
    assert counts(session) == (0, 0, 0)


def test_episode_needs_its_task_and_round(session: Session, task: Task) -> None:
    stranger = make_task(2)
    with pytest.raises(MissingRecord, match="not stored"):
        save(session, make_trace(9, task=stranger))
    with pytest.raises(MissingRecord, match="round 99"):
        save(session, make_trace(10, task=task, round_id=99))
    assert counts(session) == (0, 0, 0)
    # Passing the task stores it in the same transaction.
    assert save(session, make_trace(9, task=stranger), task=stranger) is True
    assert repository.get_task(session, task_id=stranger.task_id) == stranger


def test_inconsistent_arguments_are_refused(session: Session, task: Task) -> None:
    trace = make_trace(11, task=task, round_id=7)
    other = make_trace(12, task=task, round_id=7)
    with pytest.raises(StorageError, match="judgment ids"):
        save(session, Trace(trace.episode, trace.trajectory, trace.tool_log, other.judgment))
    with pytest.raises(StorageError, match="trajectory ids"):
        save(session, Trace(trace.episode, other.trajectory, trace.tool_log, trace.judgment))
    with pytest.raises(StorageError, match="belongs to episode"):
        save(session, Trace(trace.episode, trace.trajectory, other.tool_log, trace.judgment))
    naive = trace.episode.model_copy(update={"started_at": datetime(2026, 1, 1)})
    with pytest.raises(StorageError, match="naive"):
        save(session, Trace(naive, trace.trajectory, trace.tool_log, trace.judgment))
    assert counts(session) == (0, 0, 0)


def test_hostile_text_is_stored_verbatim(session: Session, task: Task) -> None:
    """NUL and non-ASCII from a miner are stored as sent (PostgreSQL's jsonb and text would refuse NUL)."""
    trace = make_trace(13, task=task, round_id=7)
    hostile = "nul\x00 ünïcødé 漢字 🛒 \\u0000"
    messages = (*trace.trajectory.messages[:-1], Message(role="assistant", content=hostile))  # type: ignore[union-attr]
    trajectory = trace.trajectory.model_copy(update={"messages": messages})  # type: ignore[union-attr]
    entry = trace.tool_log[0]
    log = (
        entry.model_copy(update={"arguments": {"q": hostile}, "result": json.dumps(hostile)}),
        *trace.tool_log[1:],
    )
    save(session, Trace(trace.episode, trajectory, log, trace.judgment))
    stored = get_judged(session, episode_id=trace.episode.episode_id)
    assert stored is not None
    assert stored.trajectory is not None and stored.trajectory.messages[-1].content == hostile
    assert stored.tool_log[0].arguments == {"q": hostile}


def test_text_that_cannot_be_encoded_is_refused_whole_and_its_log_made_storable(
    session: Session, task: Task
) -> None:
    trace = make_trace(15, task=task, round_id=7)
    entry = trace.tool_log[0]
    lone = entry.model_copy(update={"arguments": {"q": "tent \ud800"}, "result": '{"q": "\udfff"}'})
    log = (lone, *trace.tool_log[1:])
    with pytest.raises(UnstorableContent, match="cannot be encoded"):
        save(session, Trace(trace.episode, trace.trajectory, log, trace.judgment))
    assert counts(session) == (0, 0, 0)

    kept = repository.storable_log(log)
    assert kept[1:] == list(trace.tool_log[1:])  # what encodes is kept as it is
    assert kept[0].arguments == {"q": "tent \\ud800"} and kept[0].result == '{"q": "\\udfff"}'
    assert kept[0].result_hash == result_hash(kept[0].result)
    assert save(session, Trace(trace.episode, None, kept, trace.judgment))
    stored = get_judged(session, episode_id=trace.episode.episode_id)
    assert stored is not None and stored.tool_log[0].arguments == {"q": "tent \\ud800"}


def test_times_come_back_as_the_same_instants_in_utc(session: Session, task: Task) -> None:
    trace = make_trace(14, task=task, round_id=7)
    plus2 = timezone(timedelta(hours=2))
    episode = trace.episode.model_copy(update={"started_at": T0.astimezone(plus2)})
    save(session, Trace(episode, trace.trajectory, trace.tool_log, trace.judgment))
    stored = get_judged(session, episode_id=episode.episode_id)
    assert stored is not None
    assert stored.episode.started_at == T0 and stored.episode.started_at.utcoffset() == timedelta(0)
    assert stored.episode.finished_at == trace.episode.finished_at  # microseconds survive


def fill(session: Session, task: Task, n: int, *, first: int = 100, miners: int = 3) -> list[Trace]:
    traces = [make_trace(first + k, task=task, round_id=7, miner=k % miners) for k in range(n)]
    for trace in traces:
        save(session, trace)
    return traces


def test_iter_judged_streams_in_ingest_order_page_by_page(
    session: Session, engine: Engine, task: Task
) -> None:
    traces = fill(session, task, 10)
    limits: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        # Each page is sized first (the stored length of its trajectories, ``PAGE_CHARS``); that
        # read is bounded too (LIMIT), and only the page reads themselves are counted here.
        if "FROM episodes JOIN judgments" in statement and "length(" not in statement:
            limits.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        streamed = list(iter_judged(session, batch_size=3))
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert [t.episode.episode_id for t in streamed] == [t.episode.episode_id for t in traces]
    assert [t.tool_log for t in streamed] == [t.tool_log for t in traces]
    assert all(s.seq < t.seq for s, t in zip(streamed, streamed[1:], strict=False))
    # Four pages of at most three (the sizing read finds the end): never a whole-table read.
    assert len(limits) == 4 and all("LIMIT" in s for s in limits)
    assert not session.in_transaction()


def test_iter_judged_resumes_filters_and_limits(session: Session, task: Task) -> None:
    traces = fill(session, task, 6)
    all_seqs = [t.seq for t in iter_judged(session)]
    resumed = list(iter_judged(session, after_seq=all_seqs[2], batch_size=2))
    assert [t.episode.episode_id for t in resumed] == [t.episode.episode_id for t in traces[3:]]
    assert len(list(iter_judged(session, limit=4, batch_size=3))) == 4
    assert count_judged(session) == 6 and count_judged(session, after_seq=all_seqs[2]) == 3
    future = datetime.now(UTC) + timedelta(hours=1)
    assert list(judged_since(session, since=future)) == [] and count_judged(session, since=future) == 0
    past = datetime.now(UTC) - timedelta(hours=1)
    assert len(list(judged_since(session, since=past))) == 6


def test_iter_judged_is_lazy_and_sees_later_writes(session: Session, task: Task) -> None:
    fill(session, task, 3)
    stream = iter_judged(session, batch_size=2)
    first = next(stream)
    fill(session, task, 2, first=500)  # written between pages, through the same session
    rest = list(stream)
    assert first.episode.episode_id == "ep-00000100"
    assert [t.episode.episode_id for t in rest][-2:] == ["ep-00000500", "ep-00000501"]


def test_windows_per_hotkey_are_newest_first(session: Session, task: Task) -> None:
    traces = fill(session, task, 9, miners=3)
    window = episodes_for_hotkey_window(session, hotkey=hotkey(0), window=2)
    mine = [t for t in traces if t.episode.miner_hotkey == hotkey(0)]
    assert [w.episode_id for w in window] == [mine[-1].episode.episode_id, mine[-2].episode.episode_id]
    assert window[0].score == mine[-1].judgment.score and window[0].end == "completed"
    older = episodes_for_hotkey_window(session, hotkey=hotkey(0), window=5, before_seq=window[0].seq)
    assert [w.episode_id for w in older] == [t.episode.episode_id for t in reversed(mine[:-1])]
    samples = score_samples(session, window=2)
    assert len(samples) == 6 and {s.hotkey for s in samples} == {hotkey(k) for k in range(3)}
    by_hotkey = [s for s in samples if s.hotkey == hotkey(1)]
    assert [s.score for s in by_hotkey] == [
        t.judgment.score for t in traces if t.episode.miner_hotkey == hotkey(1)
    ][-2:]
    assert by_hotkey[0].order < by_hotkey[1].order
    assert score_samples(session, window=5, hotkeys=[hotkey(2)]) == [
        s for s in score_samples(session, window=5) if s.hotkey == hotkey(2)
    ]


def test_episode_record_is_frozen_and_validated() -> None:
    record = make_trace(1, task=make_task(1)).episode
    with pytest.raises(ValidationError):
        record.end = "timeout"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        EpisodeRecord.model_validate(record.model_dump() | {"end": "vanished"})


def test_rows_carry_the_columns_curation_filters_on(session: Session, task: Task) -> None:
    trace = make_trace(15, task=task, round_id=7)
    save(session, trace)
    row = session.scalars(select(JudgmentRow)).one()
    assert row.reasoning_value == trace.judgment.reasoning.value
    assert row.scorer == "scorer-1" and row.axis == trace.judgment.axis
    task_row = session.get(TaskRow, task.task_id)
    assert task_row is not None and task_row.leak_cluster == task.leak_cluster


WORLD = {"world_id": "w-0123456789abcdef", "pack_hash": "0123456789abcdef" * 4}


def test_a_world_episode_carries_its_world_into_both_rows_and_a_static_one_nulls(
    session: Session, task: Task
) -> None:
    static = make_trace(16, task=task, round_id=7)
    world = make_trace(17, task=task, round_id=7)
    world = dataclasses.replace(world, episode=world.episode.model_copy(update=WORLD))
    save(session, static)
    save(session, world)
    assert get_judged(session, episode_id=world.episode.episode_id).episode == world.episode  # type: ignore[union-attr]
    assert get_judged(session, episode_id=static.episode.episode_id).episode.world_id is None  # type: ignore[union-attr]
    rows = {r.episode_id: r for r in session.scalars(select(JudgmentRow))}
    assert (rows[world.episode.episode_id].world_id, rows[world.episode.episode_id].pack_hash) == (
        WORLD["world_id"],
        WORLD["pack_hash"],
    )
    assert rows[static.episode.episode_id].world_id is None
    episode = session.scalars(
        select(EpisodeRow).where(EpisodeRow.episode_id == world.episode.episode_id)
    ).one()
    assert episode.world_id == WORLD["world_id"] and episode.pack_hash == WORLD["pack_hash"]


def test_a_static_episode_hashes_as_before_worlds_and_a_half_world_is_refused() -> None:
    record = make_trace(18, task=make_task(1)).episode
    before = {k: v for k, v in record.model_dump(mode="json").items() if k not in WORLD}
    assert episode_content_hash(record, None, ()) == content_hash(
        {"episode": before, "trajectory": None, "tool_log": []}, prefix="e-"
    )
    assert episode_content_hash(record.model_copy(update=WORLD), None, ()) != episode_content_hash(
        record, None, ()
    )
    with pytest.raises(ValidationError, match="together"):
        EpisodeRecord.model_validate(record.model_dump() | {"world_id": "w-0123456789abcdef"})


def stored_chars(session: Session, episode_id: str) -> int:
    row = session.scalars(select(EpisodeRow).where(EpisodeRow.episode_id == episode_id)).one()
    session.rollback()
    return len(json.dumps(row.trajectory, ensure_ascii=False))


def test_an_over_long_trajectory_is_stored_truncated_with_a_marker(session: Session, task: Task) -> None:
    trace = make_trace(21, task=task, round_id=7)
    assert trace.trajectory is not None
    head, tail = trace.trajectory.messages[:2], trace.trajectory.messages[2:]
    filler = [Message(role="assistant", content=f"thinking {i} " + "z" * 300) for i in range(4000)]
    huge = Message(role="assistant", reasoning_content="r" * 1_000_000)
    trajectory = trace.trajectory.model_copy(update={"messages": (*head, huge, *filler, *tail)})
    long = Trace(trace.episode, trajectory, trace.tool_log, trace.judgment)
    assert save(session, long) is True
    assert save(session, long) is False  # a retried write of the same episode is still recognised
    assert stored_chars(session, trace.episode.episode_id) <= MAX_STORED_TRAJECTORY_CHARS
    stored = get_judged(session, episode_id=trace.episode.episode_id)
    assert stored is not None and stored.trajectory is not None
    messages = stored.trajectory.messages
    assert messages[:2] == head and messages[-len(tail) :] == tail  # both ends kept
    assert "chars cut" in (messages[2].reasoning_content or "")
    (marker,) = [m for m in messages[2:] if m.role == "system"]
    assert "messages cut" in (marker.content or "") and "judged whole" in (marker.content or "")
    assert stored.judgment == trace.judgment  # the verdict was made on the whole trajectory


def test_a_trajectory_within_the_bound_is_stored_whole(session: Session, task: Task) -> None:
    trace = make_trace(22, task=task, round_id=7)
    save(session, trace)
    stored = get_judged(session, episode_id=trace.episode.episode_id)
    assert stored is not None and stored.trajectory == trace.trajectory


def _exchanges(trace: Trace, outcomes: tuple[str, ...] = ("ok", "upstream_error")) -> list[InferenceExchange]:
    at = trace.episode.started_at
    return [
        InferenceExchange(
            episode_id=trace.episode.episode_id,
            seq=seq,
            upstream="https://api.example.com/v1",
            request='{"messages": [{"role": "user", "content": "nul \\u0000 and ünïcode"}]}',
            response='{"choices": []}\x00' if outcome == "ok" else '{"error": {"code": "upstream_status"}}',
            status=200 if outcome == "ok" else 502,
            outcome=outcome,  # type: ignore[arg-type]
            started_at=at + timedelta(seconds=seq),
            finished_at=at + timedelta(seconds=seq, milliseconds=700),
        )
        for seq, outcome in enumerate(outcomes)
    ]


def test_gateway_exchanges_round_trip_with_their_episode(session: Session) -> None:
    task = make_task(40)
    save_tasks(session, tasks=[task])
    trace = make_trace(4000, task=task)
    exchanges = _exchanges(trace)
    assert save(session, trace, inference_log=exchanges)
    assert not save(session, trace, inference_log=exchanges)  # idempotent
    assert repository.inference_log(session, episode_id=trace.episode.episode_id) == exchanges
    with pytest.raises(ConflictError):  # the exchanges are part of the episode's content
        save(session, trace, inference_log=exchanges[:1])


def test_an_episode_without_exchanges_hashes_as_before(session: Session) -> None:
    trace = make_trace(4001, task=make_task(41))
    wire = trace.trajectory.to_wire() if trace.trajectory else None
    assert episode_content_hash(trace.episode, wire, trace.tool_log, ()) == episode_content_hash(
        trace.episode, wire, trace.tool_log
    )
    with_exchanges = episode_content_hash(trace.episode, wire, trace.tool_log, _exchanges(trace))
    assert with_exchanges != episode_content_hash(trace.episode, wire, trace.tool_log)


def test_exchanges_of_another_episode_are_refused(session: Session) -> None:
    task = make_task(42)
    save_tasks(session, tasks=[task])
    trace, other = make_trace(4002, task=task), make_trace(4003, task=task)
    with pytest.raises(StorageError, match="belongs to episode"):
        save(session, trace, inference_log=_exchanges(other))
    assert get_judged(session, episode_id=trace.episode.episode_id) is None
