"""The repository: judged episodes in and out (one transaction per episode, idempotent, streamed out).

This module is the storage API other packages call; it also re-exports the task and ledger
functions (``storage.tasks``, ``storage.ledger``) so one import serves every caller. Every
function takes the session first and keyword-only arguments after it; write functions
commit (one call, one transaction), read functions never write. ORM rows never leave
``storage/``: callers get ``arena.types``, ``judging.types`` and ``storage.records`` values.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arena.types import Task, ToolLogEntry, Trajectory
from judging.scores import ScoreSample
from judging.types import Judgment
from storage.db import write_transaction
from storage.errors import ConflictError, MissingRecord, StorageError
from storage.ledger import (
    close_round,
    get_round,
    last_round,
    last_successful_weights,
    latest_scores,
    open_round,
    record_scores,
    record_weight_submission,
    score_history,
    weight_history,
)
from storage.mapping import (
    episode_content_hash,
    episode_to_row,
    judgment_to_row,
    log_to_row,
    row_to_episode,
    row_to_judgment,
    row_to_log,
    row_to_trajectory,
    task_to_row,
)
from storage.models import EpisodeRow, JudgmentRow, RoundRow, TaskRow, ToolLogRow
from storage.records import EpisodeRecord, JudgedTrace, ScoredEpisode
from storage.tasks import get_task, get_tasks, mark_served, pool_counts, save_tasks, set_pool, tasks_in_pool

__all__ = [
    "EpisodeRecord",
    "JudgedTrace",
    "ScoredEpisode",
    "close_round",
    "count_judged",
    "episodes_for_hotkey_window",
    "get_judged",
    "get_round",
    "get_task",
    "get_tasks",
    "iter_judged",
    "judged_since",
    "last_round",
    "last_successful_weights",
    "latest_scores",
    "mark_served",
    "open_round",
    "pool_counts",
    "record_scores",
    "record_weight_submission",
    "save_judged",
    "save_tasks",
    "score_history",
    "score_samples",
    "set_pool",
    "tasks_in_pool",
    "weight_history",
]

logger = logging.getLogger(__name__)

# Keeps IN (...) lists well under SQLite's bound-parameter limit.
IN_CHUNK = 500


def save_judged(
    session: Session,
    *,
    episode: EpisodeRecord,
    trajectory: Trajectory | None,
    tool_log: Sequence[ToolLogEntry],
    judgment: Judgment,
    task: Task | None = None,
) -> bool:
    """Store an episode, its tool log and its judgment in one transaction (all or nothing).

    Idempotent: a retried write of the same content changes nothing. The episode's task (and
    round, where it has one) must already be stored; pass ``task`` to store it in the same
    transaction where it may not be.

    Args:
        session: a session from ``make_sessionmaker``.
        episode: the episode record.
        trajectory: what the miner returned; None for an unanswered episode.
        tool_log: the tool server's log of the episode, in ``seq`` order.
        judgment: the verdict on the episode.
        task: optionally, the episode's task, inserted if not stored yet.

    Returns:
        True if written now, False if exactly this content was already stored.

    Raises:
        ConflictError: the episode id is stored with a different trajectory, log or judgment.
        MissingRecord: the task or round is not stored.
        StorageError: inconsistent arguments (ids that disagree, naive times) or a database error;
            nothing of the episode is written.
    """
    _check_consistent(episode, trajectory, tool_log, judgment, task)
    episode_hash = episode_content_hash(episode, trajectory, tool_log)
    try:
        with write_transaction(session, what=f"episode {episode.episode_id}"):
            if _already_stored(session, episode.episode_id, episode_hash, judgment.content_hash):
                return False
            _require_references(session, episode, task)
            now = datetime.now(UTC)
            # Flushed in dependency order; any failure rolls back the whole episode.
            session.add(episode_to_row(episode, trajectory, content_hash=episode_hash, now=now))
            session.flush()
            session.add_all([log_to_row(entry) for entry in tool_log])
            session.flush()
            session.add(judgment_to_row(judgment, now=now))
            session.flush()
    except StorageError as exc:
        # A concurrent writer may have stored the same episode between our check and insert.
        if isinstance(exc.__cause__, IntegrityError):
            with write_transaction(session, what=f"episode {episode.episode_id}"):
                if _already_stored(session, episode.episode_id, episode_hash, judgment.content_hash):
                    return False
        raise
    logger.debug("stored episode=%s score=%.3f logs=%d", episode.episode_id, judgment.score, len(tool_log))
    return True


def _check_consistent(
    episode: EpisodeRecord,
    trajectory: Trajectory | None,
    tool_log: Sequence[ToolLogEntry],
    judgment: Judgment,
    task: Task | None,
) -> None:
    expected = (episode.episode_id, episode.task_id, episode.miner_hotkey)
    parts: list[tuple[str, tuple[str, str, str]]] = [
        ("judgment", (judgment.episode_id, judgment.task_id, judgment.miner_hotkey))
    ]
    if trajectory is not None:
        parts.append(("trajectory", (trajectory.episode_id, trajectory.task_id, trajectory.miner_hotkey)))
    for name, ids in parts:
        if ids != expected:
            raise StorageError(
                f"{name} ids (episode, task, hotkey) {ids} disagree with the episode's {expected}"
            )
    if task is not None and task.task_id != episode.task_id:
        raise StorageError(f"task {task.task_id} is not the episode's task {episode.task_id}")
    times = [("episode started_at", episode.started_at), ("episode finished_at", episode.finished_at)]
    for entry in tool_log:
        if entry.episode_id != episode.episode_id:
            raise StorageError(f"tool log entry {entry.seq} belongs to episode {entry.episode_id}")
        times += [(f"tool log {entry.seq} started_at", entry.started_at), ("finished_at", entry.finished_at)]
    naive = [name for name, value in times if value.tzinfo is None or value.utcoffset() is None]
    if naive:
        raise StorageError(f"naive datetimes refused ({', '.join(naive)}): use timezone-aware times")


def _already_stored(session: Session, episode_id: str, episode_hash: str, judgment_hash: str) -> bool:
    stored = session.execute(
        select(EpisodeRow.content_hash, JudgmentRow.content_hash)
        .outerjoin(JudgmentRow, JudgmentRow.episode_id == EpisodeRow.episode_id)
        .where(EpisodeRow.episode_id == episode_id)
    ).first()
    if stored is None:
        return False
    if stored[0] != episode_hash:
        raise ConflictError(
            f"episode {episode_id} is already stored with other content ({stored[0]}, not {episode_hash})"
        )
    if stored[1] != judgment_hash:
        raise ConflictError(f"episode {episode_id} is already judged as {stored[1]}, not {judgment_hash}")
    return True


def _require_references(session: Session, episode: EpisodeRecord, task: Task | None) -> None:
    if session.scalar(select(TaskRow.task_id).where(TaskRow.task_id == episode.task_id)) is None:
        if task is None:
            raise MissingRecord(f"task {episode.task_id} of episode {episode.episode_id} is not stored")
        session.add(task_to_row(task, now=datetime.now(UTC)))
        session.flush()
    if episode.round_id is not None and session.get(RoundRow, episode.round_id) is None:
        raise MissingRecord(f"round {episode.round_id} of episode {episode.episode_id} is not opened")


def get_judged(session: Session, *, episode_id: str) -> JudgedTrace | None:
    """Return one judged episode with its task, trajectory, tool log and judgment, or None."""
    return next(_traces(session, [EpisodeRow.episode_id == episode_id], batch_size=1, limit=1), None)


def iter_judged(
    session: Session,
    *,
    batch_size: int = 500,
    after_seq: int = 0,
    since: datetime | None = None,
    limit: int | None = None,
) -> Iterator[JudgedTrace]:
    """Stream judged episodes in ingest order, ``batch_size`` at a time (never the whole table).

    Pages by keyset (``seq > last``), so memory stays bounded and each page is one short read
    transaction: a long curation run neither pins SQLite's WAL nor holds PostgreSQL's snapshot.

    Args:
        session: the session to read with (its read transaction ends after each page).
        batch_size: episodes per page.
        after_seq: resume after this ``JudgedTrace.seq`` (a checkpoint of an earlier run).
        since: only episodes stored at or after this time.
        limit: stop after this many.
    """
    if batch_size < 1:
        raise StorageError(f"batch_size must be >= 1, not {batch_size}")
    conditions: list[ColumnElement[bool]] = [EpisodeRow.seq > after_seq]
    if since is not None:
        conditions.append(EpisodeRow.stored_at >= since)
    return _traces(session, conditions, batch_size=batch_size, limit=limit)


def judged_since(session: Session, *, since: datetime, batch_size: int = 500) -> Iterator[JudgedTrace]:
    """Stream the judged episodes stored at or after ``since`` (incremental curation)."""
    return iter_judged(session, since=since, batch_size=batch_size)


def count_judged(session: Session, *, after_seq: int = 0, since: datetime | None = None) -> int:
    """Count the judged episodes ``iter_judged`` would yield with the same filters (for progress bars)."""
    query = (
        select(func.count())
        .select_from(EpisodeRow)
        .join(JudgmentRow, JudgmentRow.episode_id == EpisodeRow.episode_id)
    )
    query = query.where(EpisodeRow.seq > after_seq)
    if since is not None:
        query = query.where(EpisodeRow.stored_at >= since)
    return int(session.scalar(query) or 0)


def _traces(
    session: Session, conditions: list[ColumnElement[bool]], *, batch_size: int, limit: int | None
) -> Iterator[JudgedTrace]:
    last, produced = 0, 0
    while limit is None or produced < limit:
        size = batch_size if limit is None else min(batch_size, limit - produced)
        rows = session.execute(
            select(EpisodeRow, JudgmentRow)
            .join(JudgmentRow, JudgmentRow.episode_id == EpisodeRow.episode_id)
            .where(EpisodeRow.seq > last, *conditions)
            .order_by(EpisodeRow.seq)
            .limit(size)
        ).all()
        page = _page(session, [(episode, judgment) for episode, judgment in rows])
        session.commit()  # end the page's read transaction before handing out the page
        if not page:
            return
        yield from page
        last, produced = page[-1].seq, produced + len(page)


def _page(session: Session, rows: list[tuple[EpisodeRow, JudgmentRow]]) -> list[JudgedTrace]:
    if not rows:
        return []
    tasks = get_tasks(session, task_ids={episode.task_id for episode, _ in rows})
    logs = _logs_of(session, [episode.episode_id for episode, _ in rows])
    return [_trace(episode, judgment, tasks, logs) for episode, judgment in rows]


def _trace(
    episode: EpisodeRow,
    judgment: JudgmentRow,
    tasks: dict[str, Task],
    logs: dict[str, list[ToolLogEntry]],
) -> JudgedTrace:
    task = tasks.get(episode.task_id)
    if task is None:  # the foreign key makes this impossible unless the database was edited by hand
        raise StorageError(f"task {episode.task_id} of episode {episode.episode_id} is missing")
    return JudgedTrace(
        seq=episode.seq,
        stored_at=episode.stored_at,
        episode=row_to_episode(episode),
        task=task,
        trajectory=row_to_trajectory(episode),
        tool_log=tuple(logs.get(episode.episode_id, ())),
        judgment=row_to_judgment(judgment),
    )


def _logs_of(session: Session, episode_ids: Sequence[str]) -> dict[str, list[ToolLogEntry]]:
    logs: dict[str, list[ToolLogEntry]] = {}
    for start in range(0, len(episode_ids), IN_CHUNK):
        chunk = episode_ids[start : start + IN_CHUNK]
        rows = session.scalars(
            select(ToolLogRow)
            .where(ToolLogRow.episode_id.in_(chunk))
            .order_by(ToolLogRow.episode_id, ToolLogRow.seq)
        )
        for row in rows:
            logs.setdefault(row.episode_id, []).append(row_to_log(row))
    return logs


_SCORED_COLUMNS: tuple[Any, ...] = (
    EpisodeRow.seq,
    EpisodeRow.episode_id,
    EpisodeRow.task_id,
    EpisodeRow.round_id,
    EpisodeRow.miner_hotkey,
    EpisodeRow.miner_uid,
    EpisodeRow.finished_at,
    EpisodeRow.end_reason,
    JudgmentRow.score,
    JudgmentRow.success,
    JudgmentRow.axis,
)


def episodes_for_hotkey_window(
    session: Session, *, hotkey: str, window: int, before_seq: int | None = None
) -> list[ScoredEpisode]:
    """Return a hotkey's ``window`` most recent judged episodes, newest first (its scores window)."""
    query = (
        select(*_SCORED_COLUMNS)
        .join(JudgmentRow, JudgmentRow.episode_id == EpisodeRow.episode_id)
        .where(EpisodeRow.miner_hotkey == hotkey)
        .order_by(EpisodeRow.seq.desc())
        .limit(window)
    )
    if before_seq is not None:
        query = query.where(EpisodeRow.seq < before_seq)
    return [
        ScoredEpisode(
            seq=row.seq,
            episode_id=row.episode_id,
            task_id=row.task_id,
            round_id=row.round_id,
            miner_hotkey=row.miner_hotkey,
            miner_uid=row.miner_uid,
            finished_at=row.finished_at,
            end=row.end_reason,
            score=row.score,
            success=row.success,
            axis=row.axis,
        )
        for row in session.execute(query)
    ]


def score_samples(
    session: Session, *, window: int, hotkeys: Sequence[str] | None = None
) -> list[ScoreSample]:
    """Return every hotkey's ``window`` most recent judged episodes as ``judging.scores.ScoreSample``.

    One query (a window function), for rebuilding standings after a restart; ``order`` is the
    ingest sequence, so later means newer.
    """
    rank = (
        func.row_number()
        .over(partition_by=EpisodeRow.miner_hotkey, order_by=EpisodeRow.seq.desc())
        .label("rank")
    )
    inner = select(EpisodeRow.miner_hotkey, EpisodeRow.seq, JudgmentRow.score, rank).join(
        JudgmentRow, JudgmentRow.episode_id == EpisodeRow.episode_id
    )
    if hotkeys is not None:
        inner = inner.where(EpisodeRow.miner_hotkey.in_(list(hotkeys)))
    ranked = inner.subquery()
    rows = session.execute(
        select(ranked.c.miner_hotkey, ranked.c.seq, ranked.c.score)
        .where(ranked.c.rank <= window)
        .order_by(ranked.c.miner_hotkey, ranked.c.seq)
    )
    return [ScoreSample(hotkey=row.miner_hotkey, score=row.score, order=row.seq) for row in rows]
