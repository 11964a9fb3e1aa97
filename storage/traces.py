"""Reading judged episodes: by id, streamed in ingest order (keyset pages), and per-hotkey score windows."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Text, and_, cast, func, select
from sqlalchemy.orm import Session

from arena.inference import GATEWAY_FAULT, InferenceExchange
from arena.types import Task, ToolLogEntry, Trajectory
from judging.scores import ScoreSample
from judging.types import ATTESTED, OUTAGE_CAUSES
from storage.errors import StorageError
from storage.mapping import row_to_episode, row_to_exchange, row_to_judgment, row_to_log, row_to_trajectory
from storage.models import EpisodeRow, InferenceRow, JudgmentRow, ToolLogRow
from storage.records import JudgedTrace, ScoredEpisode
from storage.tasks import get_tasks

# Keeps IN (...) lists well under SQLite's bound-parameter limit.
IN_CHUNK = 500
# Stored trajectory characters per page of a stream, whatever its batch size.
PAGE_CHARS = 16 * 2**20


def get_judged(session: Session, *, episode_id: str) -> JudgedTrace | None:
    """Return one judged episode with its task, trajectory, tool log and judgment, or None."""
    return next(_traces(session, [EpisodeRow.episode_id == episode_id], batch_size=1, limit=1), None)


def judged_by_seq(session: Session, seqs: Sequence[int]) -> dict[int, JudgedTrace]:
    """The judged episodes of these ``seq`` values, by seq (one that is gone is left out)."""
    found: dict[int, JudgedTrace] = {}
    for start in range(0, len(seqs), IN_CHUNK):
        chunk = list(seqs[start : start + IN_CHUNK])
        for trace in _traces(session, [EpisodeRow.seq.in_(chunk)], batch_size=len(chunk), limit=None):
            found[trace.seq] = trace
    return found


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


def judged_in_world(session: Session, *, pack_hash: str, batch_size: int = 500) -> Iterator[JudgedTrace]:
    """Stream the judged episodes of one world pack, in ingest order (``world_id`` is indexed)."""
    world_id = f"w-{pack_hash[:16]}"
    conditions = [EpisodeRow.world_id == world_id, EpisodeRow.pack_hash == pack_hash]
    return _traces(session, conditions, batch_size=batch_size, limit=None)


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
    tasks: dict[str, Task] = {}  # each task read (and validated) once per iteration, not once per page
    while limit is None or produced < limit:
        size = batch_size if limit is None else min(batch_size, limit - produced)
        end = _page_end(session, conditions, after=last, size=size)
        if end is None:
            session.commit()
            return
        rows = session.execute(
            select(EpisodeRow, JudgmentRow)
            .join(JudgmentRow, JudgmentRow.episode_id == EpisodeRow.episode_id)
            .where(EpisodeRow.seq > last, EpisodeRow.seq <= end, *conditions)
            .order_by(EpisodeRow.seq)
            .limit(size)
        ).all()
        page = _page(session, [(episode, judgment) for episode, judgment in rows], tasks)
        session.commit()  # end the page's read transaction before handing out the page
        if not page:
            return
        yield from page
        last, produced = page[-1].seq, produced + len(page)


def _page_end(
    session: Session, conditions: list[ColumnElement[bool]], *, after: int, size: int
) -> int | None:
    """The last ``seq`` of the next page: at most ``size`` episodes and ``PAGE_CHARS`` of trajectories.

    Only the lengths are read here, so a page of large trajectories holds fewer of them: the
    memory of a stream is bounded by stored size, not only by a count of rows. A single
    trajectory over ``PAGE_CHARS`` makes a page of its own. None when nothing is left.
    """
    length = func.coalesce(func.length(cast(EpisodeRow.trajectory, Text)), 0)
    rows = session.execute(
        select(EpisodeRow.seq, length)
        .join(JudgmentRow, JudgmentRow.episode_id == EpisodeRow.episode_id)
        .where(EpisodeRow.seq > after, *conditions)
        .order_by(EpisodeRow.seq)
        .limit(size)
    ).all()
    if not rows:
        return None
    end, total = rows[0][0], 0
    for seq, chars in rows:
        if total and total + int(chars) > PAGE_CHARS:
            break
        end, total = seq, total + int(chars)
    return int(end)


def _page(
    session: Session, rows: list[tuple[EpisodeRow, JudgmentRow]], tasks: dict[str, Task]
) -> list[JudgedTrace]:
    if not rows:
        return []
    missing = {episode.task_id for episode, _ in rows} - tasks.keys()
    if missing:
        tasks.update(get_tasks(session, task_ids=missing))
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


def inference_log(session: Session, *, episode_id: str) -> list[InferenceExchange]:
    """An episode's exchanges through the inference gateway, in ``seq`` order (none: it made none)."""
    rows = session.scalars(
        select(InferenceRow).where(InferenceRow.episode_id == episode_id).order_by(InferenceRow.seq)
    )
    return [row_to_exchange(row) for row in rows]


def judged_miners(session: Session) -> list[str]:
    """Return the hotkeys with at least one judged, completed episode, sorted."""
    query = (
        select(EpisodeRow.miner_hotkey)
        .join(JudgmentRow, JudgmentRow.episode_id == EpisodeRow.episode_id)
        .where(EpisodeRow.end_reason == "completed", EpisodeRow.trajectory.is_not(None))
        .distinct()
        .order_by(EpisodeRow.miner_hotkey)
    )
    return list(session.scalars(query))


def recent_trajectories(
    session: Session, *, hotkey: str, limit: int
) -> list[tuple[Trajectory, list[ToolLogEntry]]]:
    """Return a miner's ``limit`` most recent completed trajectories with their tool logs, newest first.

    The sample the miner-level axis verdict is computed from (``judging.axis.axis_for_miner``).
    """
    rows = session.scalars(
        select(EpisodeRow)
        .join(JudgmentRow, JudgmentRow.episode_id == EpisodeRow.episode_id)
        .where(
            EpisodeRow.miner_hotkey == hotkey,
            EpisodeRow.end_reason == "completed",
            EpisodeRow.trajectory.is_not(None),
        )
        .order_by(EpisodeRow.seq.desc())
        .limit(limit)
    ).all()
    logs = _logs_of(session, [row.episode_id for row in rows])
    sample = [(row_to_trajectory(row), logs.get(row.episode_id, [])) for row in rows]
    session.commit()  # a short read transaction, as for every page
    return [(trajectory, log) for trajectory, log in sample if trajectory is not None]


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
    session: Session,
    *,
    window: int,
    hotkeys: Sequence[str] | None = None,
    exclude_reasoning_outages: bool = False,
    exclude_gateway_faults: bool = False,
) -> list[ScoreSample]:
    """Return every hotkey's ``window`` most recent judged episodes as ``judging.scores.ScoreSample``.

    One query (a window function), for rebuilding standings after a restart; ``order`` is the
    ingest sequence, so later means newer. Each sample carries its task and the work its episode
    did (``episodes.work_hash``), from which ``judging.scores.standings`` shares copies' credit.

    Args:
        session: the session to read with.
        window: episodes per hotkey.
        hotkeys: only these hotkeys (all when None).
        exclude_reasoning_outages: leave out judgments whose reasoning check is unscored because
            the configured judge was unavailable (``Judgment.reasoning_outage``), before the window
            is taken, so that an outage on our side never moves weights.
        exclude_gateway_faults: leave out episodes in which the inference gateway failed in its
            own name (an exchange with outcome ``gateway_error``): our fault, never the miner's.

    ``ScoreSample.attested`` is set where the judgment's axis is ``A-attested``.
    """
    rank = (
        func.row_number()
        .over(partition_by=EpisodeRow.miner_hotkey, order_by=EpisodeRow.seq.desc())
        .label("rank")
    )
    inner = select(
        EpisodeRow.miner_hotkey,
        EpisodeRow.seq,
        EpisodeRow.task_id,
        EpisodeRow.work_hash,
        JudgmentRow.score,
        JudgmentRow.axis,
        rank,
    ).join(JudgmentRow, JudgmentRow.episode_id == EpisodeRow.episode_id)
    if hotkeys is not None:
        inner = inner.where(EpisodeRow.miner_hotkey.in_(list(hotkeys)))
    if exclude_reasoning_outages:
        inner = inner.where(~_reasoning_outage())
    if exclude_gateway_faults:
        faulted = select(InferenceRow.episode_id).where(InferenceRow.outcome == GATEWAY_FAULT)
        inner = inner.where(EpisodeRow.episode_id.not_in(faulted))
    ranked = inner.subquery()
    rows = session.execute(
        select(
            ranked.c.miner_hotkey,
            ranked.c.seq,
            ranked.c.task_id,
            ranked.c.work_hash,
            ranked.c.score,
            ranked.c.axis,
        )
        .where(ranked.c.rank <= window)
        .order_by(ranked.c.miner_hotkey, ranked.c.seq)
    )
    return [
        ScoreSample(
            hotkey=row.miner_hotkey,
            score=row.score,
            order=row.seq,
            task_id=row.task_id,
            work=row.work_hash,
            attested=row.axis == ATTESTED,
        )
        for row in rows
    ]


def _reasoning_outage() -> ColumnElement[bool]:
    """SQL for ``Judgment.reasoning_outage``: reasoning unscored because the judge failed.

    Never NULL (a NULL cause reads as ``""``), so that ``NOT`` of it keeps every other judgment.
    """
    cause = func.coalesce(JudgmentRow.reasoning_unscored, "")
    return and_(JudgmentRow.reasoning_value.is_(None), cause.in_(OUTAGE_CAUSES))
