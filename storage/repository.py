"""The repository: the storage API callers use; writes judged episodes (one transaction each, idempotent).

It also re-exports the reads (``storage.traces``), tasks (``storage.tasks``) and ledger
(``storage.ledger``) functions, so one import serves every caller. Every
function takes the session first and keyword-only arguments after it; write functions
commit (one call, one transaction), read functions never write. ORM rows never leave
``storage/``: callers get ``arena.types``, ``judging.types`` and ``storage.records`` values.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arena.inference import InferenceExchange
from arena.types import Task, ToolLogEntry, Trajectory
from judging.types import Judgment
from storage.bounds import bounded_wire
from storage.db import write_transaction
from storage.errors import ConflictError, MissingRecord, StorageError, UnstorableContent
from storage.ledger import (
    close_round,
    commit_recorded,
    confirm_submission,
    get_round,
    last_round,
    last_successful_weights,
    latest_scores,
    open_round,
    pending_reveals,
    record_reveal,
    record_scores,
    record_weight_submission,
    score_history,
    unconfirmed_submission,
    weight_history,
)
from storage.mapping import (
    episode_content_hash,
    episode_to_row,
    exchange_to_row,
    judgment_to_row,
    log_to_row,
    storable_log,
    task_to_row,
)
from storage.models import EpisodeRow, JudgmentRow, RoundRow, TaskRow
from storage.records import EpisodeRecord, JudgedTrace, ScoredEpisode
from storage.tasks import get_task, get_tasks, mark_served, pool_counts, save_tasks, set_pool, tasks_in_pool
from storage.traces import (
    count_judged,
    episodes_for_hotkey_window,
    get_judged,
    inference_log,
    iter_judged,
    judged_in_world,
    judged_since,
    score_samples,
)

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
    "inference_log",
    "iter_judged",
    "judged_in_world",
    "judged_since",
    "last_round",
    "last_successful_weights",
    "latest_scores",
    "mark_served",
    "open_round",
    "pending_reveals",
    "unconfirmed_submission",
    "commit_recorded",
    "confirm_submission",
    "pool_counts",
    "record_reveal",
    "record_scores",
    "record_weight_submission",
    "save_judged",
    "save_tasks",
    "score_history",
    "score_samples",
    "set_pool",
    "storable_log",
    "tasks_in_pool",
    "weight_history",
]

logger = logging.getLogger(__name__)


def save_judged(
    session: Session,
    *,
    episode: EpisodeRecord,
    trajectory: Trajectory | None,
    tool_log: Sequence[ToolLogEntry],
    judgment: Judgment,
    task: Task | None = None,
    inference_log: Sequence[InferenceExchange] = (),
    work: str | None = None,
) -> bool:
    """Store an episode, its tool log, its gateway exchanges and its judgment in one transaction.

    Idempotent: a retried write of the same content changes nothing. The episode's task (and
    round, where it has one) must already be stored; pass ``task`` to store it in the same
    transaction where it may not be. A trajectory over ``MAX_STORED_TRAJECTORY_CHARS`` is stored
    truncated with markers (``storage.bounds``); the judgment, made on the whole, as it is.

    Args:
        session: a session from ``make_sessionmaker``.
        episode: the episode record.
        trajectory: what the miner returned; None for an unanswered episode.
        tool_log: the tool server's log of the episode, in ``seq`` order.
        judgment: the verdict on the episode.
        task: optionally, the episode's task, inserted if not stored yet.
        inference_log: the episode's exchanges through the inference gateway, in ``seq`` order.
        work: the work a scored round episode did (``judging.duplicates.work_hash``), which the
            weights read to share credit between copies; None keeps the episode's own credit.

    Returns:
        True if written now, False if exactly this content was already stored.

    Raises:
        ConflictError: the episode id is stored with a different trajectory, log or judgment.
        MissingRecord: the task or round is not stored.
        UnstorableContent: the trajectory or the tool log holds text that cannot be encoded
            (a lone surrogate); nothing is written. The content hash covers everything stored
            (the judgment has its own, computed when it was made), so it is the one check.
        StorageError: inconsistent arguments (ids that disagree, naive times) or a database error;
            nothing of the episode is written.
    """
    _check_consistent(episode, trajectory, tool_log, judgment, task)
    _check_exchanges(episode, inference_log)
    wire: dict[str, Any] | None = None
    if trajectory is not None:  # encoded once: bounded, hashed and stored
        wire, truncated = bounded_wire(trajectory.to_wire())
        if truncated:
            logger.warning(
                "trajectory_truncated episode=%s messages=%d", episode.episode_id, len(trajectory.messages)
            )
    try:
        episode_hash = episode_content_hash(episode, wire, tool_log, inference_log)
    except UnicodeEncodeError as exc:
        raise UnstorableContent(
            f"episode {episode.episode_id} holds text that cannot be encoded ({exc.reason})"
        ) from exc
    try:
        with write_transaction(session, what=f"episode {episode.episode_id}"):
            if _already_stored(session, episode.episode_id, episode_hash, judgment.content_hash):
                return False
            _require_references(session, episode, task)
            now = datetime.now(UTC)
            # Flushed in dependency order; any failure rolls back the whole episode.
            session.add(episode_to_row(episode, wire, content_hash=episode_hash, now=now, work=work))
            session.flush()
            session.add_all([log_to_row(entry) for entry in tool_log])
            session.add_all([exchange_to_row(exchange) for exchange in inference_log])
            session.flush()
            session.add(
                judgment_to_row(judgment, now=now, world_id=episode.world_id, pack_hash=episode.pack_hash)
            )
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


def _check_exchanges(episode: EpisodeRecord, inference_log: Sequence[InferenceExchange]) -> None:
    for exchange in inference_log:
        if exchange.episode_id != episode.episode_id:
            raise StorageError(f"inference exchange {exchange.seq} belongs to episode {exchange.episode_id}")
        for value in (exchange.started_at, exchange.finished_at):
            if value.tzinfo is None or value.utcoffset() is None:
                raise StorageError(f"inference exchange {exchange.seq}: naive datetimes refused")


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
