"""The validator's ledger: rounds, miner standings over time, and weight submissions (all idempotent)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, Table, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from arena.types import content_hash
from judging.scores import MinerStanding
from storage.db import write_transaction
from storage.errors import ConflictError, MissingRecord
from storage.models import MinerScoreRow, RoundRow, WeightSubmissionRow
from storage.records import RevealStatus, RoundRecord, ScoreRecord, WeightRecord

logger = logging.getLogger(__name__)

# Rows per multi-row INSERT (SQLite's bound-parameter limit, 8 columns each).
INSERT_CHUNK = 100


def open_round(
    session: Session,
    *,
    round_id: int,
    validator_hotkey: str,
    started_at: datetime,
    block: int | None = None,
    task_ids: Sequence[str] = (),
) -> bool:
    """Record the start of a round (before its episodes are stored: they refer to it).

    Returns:
        True if opened now, False if this round was already recorded with the same content.

    Raises:
        ConflictError: the round id is stored with another validator, block or task list.
    """
    record = RoundRecord(
        round_id=round_id,
        validator_hotkey=validator_hotkey,
        started_at=started_at,
        block=block,
        task_ids=tuple(task_ids),
    )
    with write_transaction(session, what=f"round {round_id}"):
        row = session.get(RoundRow, round_id)
        if row is not None:
            stored = (row.validator_hotkey, row.block, tuple(row.task_ids))
            if stored != (record.validator_hotkey, record.block, record.task_ids):
                raise ConflictError(f"round {round_id} is already stored with other content")
            return False
        session.add(
            RoundRow(
                round_id=round_id,
                validator_hotkey=record.validator_hotkey,
                block=record.block,
                task_ids=list(record.task_ids),
                started_at=record.started_at,
            )
        )
    logger.info("round opened round=%d tasks=%d", round_id, len(record.task_ids))
    return True


def close_round(
    session: Session, *, round_id: int, closed_at: datetime, stats: Mapping[str, Any] | None = None
) -> bool:
    """Record the end of a round with its summary ``stats`` (JSON-able).

    Returns:
        True if closed now, False if it was already closed (the first close stands).

    Raises:
        MissingRecord: no such round.
    """
    with write_transaction(session, what=f"round {round_id}"):
        row = session.get(RoundRow, round_id)
        if row is None:
            raise MissingRecord(f"round {round_id} was never opened")
        if row.closed_at is not None:
            return False
        row.closed_at = closed_at
        row.stats = dict(stats) if stats is not None else None
    logger.info("round closed round=%d", round_id)
    return True


def _round(row: RoundRow) -> RoundRecord:
    return RoundRecord(
        round_id=row.round_id,
        validator_hotkey=row.validator_hotkey,
        started_at=row.started_at,
        block=row.block,
        task_ids=tuple(row.task_ids),
        closed_at=row.closed_at,
        stats=row.stats,
    )


def get_round(session: Session, *, round_id: int) -> RoundRecord | None:
    """Return a round, or None."""
    row = session.get(RoundRow, round_id)
    return None if row is None else _round(row)


def last_round(session: Session) -> RoundRecord | None:
    """Return the round with the highest id (where a restarted validator continues), or None."""
    row = session.scalars(select(RoundRow).order_by(RoundRow.round_id.desc()).limit(1)).first()
    return None if row is None else _round(row)


def _insert_ignoring_duplicates(session: Session, table: Table, rows: list[dict[str, Any]]) -> int:
    """INSERT rows, silently skipping those whose unique key is already stored; return how many went in."""
    dialect = sqlite if session.get_bind().dialect.name == "sqlite" else postgresql
    inserted = 0
    for start in range(0, len(rows), INSERT_CHUNK):
        statement = (
            dialect.insert(table)
            .values(rows[start : start + INSERT_CHUNK])
            .on_conflict_do_nothing()
            .returning(*table.primary_key.columns)
        )
        # RETURNING, not rowcount: drivers disagree on rowcount for multi-row inserts.
        inserted += len(session.execute(statement).all())
    return inserted


def record_scores(
    session: Session,
    *,
    standings: Iterable[MinerStanding],
    hotkey_to_uid: Mapping[str, int],
    block: int,
    at: datetime,
) -> int:
    """Append every hotkey's standing at ``block`` (a retried call for the same block adds nothing).

    Returns:
        How many standings were new.
    """
    rows = [
        {
            "hotkey": s.hotkey,
            "uid": hotkey_to_uid.get(s.hotkey),
            "n": s.n,
            "mean": s.mean,
            "lower": s.lower,
            "block": block,
            "at": at,
        }
        for s in standings
    ]
    with write_transaction(session, what=f"scores at block {block}"):
        inserted = _insert_ignoring_duplicates(session, cast(Table, MinerScoreRow.__table__), rows)
    logger.info("scores recorded block=%d new=%d", block, inserted)
    return inserted


def _score(row: MinerScoreRow) -> ScoreRecord:
    return ScoreRecord(
        hotkey=row.hotkey, uid=row.uid, n=row.n, mean=row.mean, lower=row.lower, block=row.block, at=row.at
    )


def latest_scores(session: Session) -> list[ScoreRecord]:
    """Return each hotkey's most recent standing, ordered by hotkey."""
    newest = (
        select(MinerScoreRow.hotkey, func.max(MinerScoreRow.block).label("block"))
        .group_by(MinerScoreRow.hotkey)
        .subquery()
    )
    query = (
        select(MinerScoreRow)
        .join(newest, (MinerScoreRow.hotkey == newest.c.hotkey) & (MinerScoreRow.block == newest.c.block))
        .order_by(MinerScoreRow.hotkey)
    )
    return [_score(row) for row in session.scalars(query)]


def score_history(session: Session, *, hotkey: str, limit: int = 100) -> list[ScoreRecord]:
    """Return a hotkey's standings, newest first."""
    query = (
        select(MinerScoreRow)
        .where(MinerScoreRow.hotkey == hotkey)
        .order_by(MinerScoreRow.block.desc())
        .limit(limit)
    )
    return [_score(row) for row in session.scalars(query)]


def record_weight_submission(session: Session, *, submission: WeightRecord) -> bool:
    """Append one set_weights attempt, successful or not (the same submission twice is stored once).

    A pending commit (``reveal_status="pending"``) stays pending until its own check settles it
    (``record_reveal``); a newer commit does not settle older ones.

    Returns:
        True if stored now, False if this exact submission was already stored.
    """
    # The reveal's outcome is not part of the submission's identity: it is learned later.
    identity = submission.model_dump(mode="json", exclude={"reveal_status", "reveal_block"})
    row = {
        "submission_hash": content_hash(identity, prefix="w-"),
        "uids": list(submission.uids),
        "weights": list(submission.weights),
        "block": submission.block,
        "success": submission.success,
        "message": submission.message,
        "version_key": submission.version_key,
        "at": submission.at,
        "reveal_round": submission.reveal_round,
        "reveal_status": submission.reveal_status,
        "reveal_block": submission.reveal_block,
    }
    table = cast(Table, WeightSubmissionRow.__table__)
    with write_transaction(session, what="weight submission"):
        inserted = _insert_ignoring_duplicates(session, table, [row])
    logger.info(
        "weights recorded success=%s block=%s uids=%d reveal_round=%s",
        submission.success,
        submission.block,
        len(submission.uids),
        submission.reveal_round,
    )
    return inserted == 1


def record_reveal(
    session: Session, *, reveal_round: int, commit_block: int | None, status: RevealStatus, block: int
) -> bool:
    """Record what the check of one pending commit (its reveal round, its block) found at ``block``.

    Returns:
        True if that pending commit was updated, False if none was pending.
    """
    block_column = WeightSubmissionRow.block
    with write_transaction(session, what="weight reveal"):
        result = session.execute(
            update(WeightSubmissionRow)
            .where(
                WeightSubmissionRow.reveal_status == "pending",
                WeightSubmissionRow.reveal_round == reveal_round,
                block_column.is_(None) if commit_block is None else block_column == commit_block,
            )
            .values(reveal_status=status, reveal_block=block)
        )
    updated = bool(cast(CursorResult[Any], result).rowcount)
    logger.info(
        "weight reveal recorded reveal_round=%d commit_block=%s status=%s block=%d",
        reveal_round,
        commit_block,
        status,
        block,
    )
    return updated


def _weights(row: WeightSubmissionRow) -> WeightRecord:
    return WeightRecord(
        uids=tuple(row.uids),
        weights=tuple(row.weights),
        block=row.block,
        success=row.success,
        message=row.message,
        version_key=row.version_key,
        at=row.at,
        reveal_round=row.reveal_round,
        reveal_status=cast(RevealStatus | None, row.reveal_status),
        reveal_block=row.reveal_block,
    )


def last_successful_weights(session: Session, *, landed: bool = False) -> WeightRecord | None:
    """Return the most recent submission the chain accepted, or None.

    A commit whose reveal was found missing does not count: its weights never landed. With
    ``landed``, only one whose weights are known to be on chain: a plain submission, or a
    commit whose reveal was verified.
    """
    status = WeightSubmissionRow.reveal_status
    query = select(WeightSubmissionRow).where(
        WeightSubmissionRow.success.is_(True), status.is_(None) | (status != "missing")
    )
    if landed:
        query = query.where(
            WeightSubmissionRow.reveal_status.is_(None) | (WeightSubmissionRow.reveal_status == "revealed")
        )
    row = session.scalars(query.order_by(WeightSubmissionRow.id.desc()).limit(1)).first()
    return None if row is None else _weights(row)


def unconfirmed_submission(session: Session) -> WeightRecord | None:
    """Return the newest attempt whose outcome is unknown (its submit timed out), or None."""
    query = (
        select(WeightSubmissionRow)
        .where(WeightSubmissionRow.reveal_status == "unconfirmed")
        .order_by(WeightSubmissionRow.id.desc())
        .limit(1)
    )
    row = session.scalars(query).first()
    return None if row is None else _weights(row)


def commit_recorded(session: Session, *, block: int, reveal_round: int) -> bool:
    """Whether a commit included at ``block`` with ``reveal_round`` is among the stored submissions."""
    query = select(WeightSubmissionRow.id).where(
        WeightSubmissionRow.block == block, WeightSubmissionRow.reveal_round == reveal_round
    )
    return session.scalars(query.limit(1)).first() is not None


def confirm_submission(session: Session, *, block: int, reveal_round: int | None) -> WeightRecord | None:
    """Mark the newest unconfirmed attempt as landed at ``block`` (a commit: with ``reveal_round``, pending).

    Returns:
        The attempt as now stored, or None when none was unconfirmed.
    """
    with write_transaction(session, what="weight confirmation"):
        row = session.scalars(
            select(WeightSubmissionRow)
            .where(WeightSubmissionRow.reveal_status == "unconfirmed")
            .order_by(WeightSubmissionRow.id.desc())
            .limit(1)
        ).first()
        if row is None:
            return None
        row.success, row.block, row.reveal_round = True, block, reveal_round
        row.reveal_status = "pending" if reveal_round is not None else None
        confirmed = _weights(row)
    logger.info("weights confirmed block=%d reveal_round=%s", block, reveal_round)
    return confirmed


def pending_reveals(session: Session) -> list[WeightRecord]:
    """Return every commit whose reveal has not been settled yet, oldest first."""
    query = (
        select(WeightSubmissionRow)
        .where(WeightSubmissionRow.reveal_status == "pending")
        .order_by(WeightSubmissionRow.id)
    )
    return [_weights(row) for row in session.scalars(query)]


def weight_history(session: Session, *, limit: int = 20) -> list[WeightRecord]:
    """Return the most recent submissions, successful or not, newest first."""
    query = select(WeightSubmissionRow).order_by(WeightSubmissionRow.id.desc()).limit(limit)
    return [_weights(row) for row in session.scalars(query)]
