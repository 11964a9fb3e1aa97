r"""SQLAlchemy 2.0 ORM rows: one schema for SQLite and PostgreSQL (never used outside storage/).

Structured documents (task, trajectory, checks, tool arguments, tool results) are ``JSON``
columns: text on SQLite and PostgreSQL's ``json`` (not ``jsonb``), because ``jsonb`` rejects
``\u0000``, which a miner's trajectory may contain and which we must still store verbatim.
(Lone surrogates are not text at all: they are refused where text enters, see
``arena.arguments`` and ``storage.errors.UnstorableContent``.) Times are timezone-aware UTC
on the way out, whatever the backend.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Dialect,
    Double,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

# Stable constraint names, so migrations can address them on both backends.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# Integer keys that autoincrement: BIGINT on PostgreSQL, INTEGER (the rowid alias) on SQLite.
AutoId = BigInteger().with_variant(Integer(), "sqlite")
Json = JSON(none_as_null=True)


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware datetime stored as UTC; naive datetimes are refused, never guessed."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Convert to UTC (naive UTC text on SQLite); refuse naive datetimes."""
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(
                f"naive datetime {value.isoformat()} refused: storage needs timezone-aware times"
            )
        utc = value.astimezone(UTC)
        # SQLite has no time zones: store naive UTC text, which also sorts correctly.
        return utc.replace(tzinfo=None) if dialect.name == "sqlite" else utc

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Return an aware UTC datetime."""
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    """Declarative base with the naming convention and the type map shared by every row."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {datetime: UTCDateTime(), dict[str, Any]: Json, list[Any]: Json}


class TaskRow(Base):
    """A task: its full JSON plus the columns pools, rotation and curation filter on."""

    __tablename__ = "tasks"

    task_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    intent: Mapped[str] = mapped_column(String(16))
    pool: Mapped[str] = mapped_column(String(16), index=True)
    leak_cluster: Mapped[str | None] = mapped_column(String(128), index=True)
    catalog_version: Mapped[str | None] = mapped_column(String(128))
    generator_version: Mapped[str] = mapped_column(String(64))
    difficulty: Mapped[str] = mapped_column(String(16))
    source: Mapped[str] = mapped_column(String(64))
    task: Mapped[dict[str, Any]]
    created_at: Mapped[datetime]
    served_at: Mapped[datetime | None]
    retired_at: Mapped[datetime | None]


class RoundRow(Base):
    """A validator round: when it ran, at which block, which tasks it drew."""

    __tablename__ = "rounds"

    round_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    validator_hotkey: Mapped[str] = mapped_column(String(64))
    block: Mapped[int | None] = mapped_column(BigInteger)
    task_ids: Mapped[list[Any]]
    started_at: Mapped[datetime]
    closed_at: Mapped[datetime | None]
    stats: Mapped[dict[str, Any] | None]


class EpisodeRow(Base):
    """One (miner, task) episode: who, when, how it ended, and the returned trajectory.

    ``seq`` is the ingest order (curation streams and checkpoints on it); ``content_hash``
    addresses episode, trajectory and tool log together, so a retried write is recognised.
    """

    __tablename__ = "episodes"
    __table_args__ = (Index("ix_episodes_miner_hotkey_seq", "miner_hotkey", "seq"),)

    seq: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    episode_id: Mapped[str] = mapped_column(String(64), unique=True)
    round_id: Mapped[int | None] = mapped_column(ForeignKey("rounds.round_id"), index=True)
    task_id: Mapped[str] = mapped_column(ForeignKey("tasks.task_id"), index=True)
    miner_hotkey: Mapped[str] = mapped_column(String(64))
    miner_uid: Mapped[int | None] = mapped_column(Integer)
    validator_hotkey: Mapped[str] = mapped_column(String(64))
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime]
    end_reason: Mapped[str] = mapped_column(String(32))
    # The world pack the episode ran on (``arena.world``); NULL for static sb-1 tasks.
    world_id: Mapped[str | None] = mapped_column(String(64), index=True)
    pack_hash: Mapped[str | None] = mapped_column(String(64))
    trajectory: Mapped[dict[str, Any] | None]
    content_hash: Mapped[str] = mapped_column(String(40))
    stored_at: Mapped[datetime] = mapped_column(index=True)
    # The work a scored round episode did (``judging.duplicates.work_hash``), for the credit the
    # weights give it; NULL outside rounds, for zeros and before migration 0006. Not in
    # ``content_hash``: it is derived from what is (the tool log and the answer).
    work_hash: Mapped[str | None] = mapped_column(String(64))


class ToolLogRow(Base):
    """One tool call as the validator's tool server executed it (the episode's ground truth)."""

    __tablename__ = "tool_log"
    __table_args__ = (CheckConstraint("seq >= 0", name="seq_non_negative"),)

    episode_id: Mapped[str] = mapped_column(
        ForeignKey("episodes.episode_id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    # Unbounded: both come from the miner (a header, a URL segment) and must never fail a write.
    call_id: Mapped[str | None] = mapped_column(String)
    tool: Mapped[str] = mapped_column(String)
    arguments: Mapped[dict[str, Any]]
    # A JSON string, not TEXT: PostgreSQL's text type cannot hold NUL, JSON escapes it.
    result: Mapped[str] = mapped_column(Json)
    result_hash: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(8))
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime]
    nonce_status: Mapped[str] = mapped_column(String(8))
    # The world version the result came from (NULL over a static catalog; migration 0005).
    world_version: Mapped[int | None] = mapped_column(Integer)


class InferenceRow(Base):
    """One request an episode's agent sent through the inference gateway, and its answer."""

    __tablename__ = "inference_log"
    __table_args__ = (CheckConstraint("seq >= 0", name="seq_non_negative"),)

    episode_id: Mapped[str] = mapped_column(
        ForeignKey("episodes.episode_id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    upstream: Mapped[str] = mapped_column(String)
    # JSON strings, not TEXT: PostgreSQL's text type cannot hold NUL, JSON escapes it.
    request: Mapped[str] = mapped_column(Json)
    response: Mapped[str] = mapped_column(Json)
    status: Mapped[int] = mapped_column(Integer)
    outcome: Mapped[str] = mapped_column(String(16), index=True)
    tool_calls: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime]


class JudgmentRow(Base):
    """The verdict on one episode, addressed by its content hash."""

    __tablename__ = "judgments"
    __table_args__ = (CheckConstraint("score >= 0 AND score <= 1", name="score_in_unit_interval"),)

    content_hash: Mapped[str] = mapped_column(String(40), primary_key=True)
    episode_id: Mapped[str] = mapped_column(
        ForeignKey("episodes.episode_id", ondelete="CASCADE"), unique=True
    )
    task_id: Mapped[str] = mapped_column(String(64))
    miner_hotkey: Mapped[str] = mapped_column(String(64))
    success: Mapped[bool] = mapped_column(Boolean)
    score: Mapped[float] = mapped_column(Double)
    axis: Mapped[str] = mapped_column(String(16))
    end_reason: Mapped[str] = mapped_column(String)
    reasoning_value: Mapped[float | None] = mapped_column(Double)
    # Why the reasoning check is unscored (``judging.types.UnscoredCause``), for the weights query.
    reasoning_unscored: Mapped[str | None] = mapped_column(String(16))
    scorer: Mapped[str] = mapped_column(String(64))
    # Its episode's world (NULL for static tasks), so judgments are filtered by world without a join.
    world_id: Mapped[str | None] = mapped_column(String(64), index=True)
    pack_hash: Mapped[str | None] = mapped_column(String(64))
    rejects: Mapped[list[Any]]
    checks: Mapped[list[Any]]
    outcome: Mapped[dict[str, Any]]
    process: Mapped[dict[str, Any]]
    reasoning: Mapped[dict[str, Any]]
    versions: Mapped[dict[str, Any]]
    hallucinated_product_ids: Mapped[list[Any]]
    fabricated_call_ids: Mapped[list[Any]]
    judged_at: Mapped[datetime]


class MinerScoreRow(Base):
    """A hotkey's windowed standing at one block (the history behind the weights)."""

    __tablename__ = "miner_scores"
    __table_args__ = (UniqueConstraint("hotkey", "block", name="uq_miner_scores_hotkey_block"),)

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    hotkey: Mapped[str] = mapped_column(String(64))
    uid: Mapped[int | None] = mapped_column(Integer)
    n: Mapped[int] = mapped_column(Integer)
    mean: Mapped[float] = mapped_column(Double)
    lower: Mapped[float] = mapped_column(Double)
    block: Mapped[int] = mapped_column(BigInteger)
    at: Mapped[datetime]


class WeightSubmissionRow(Base):
    """One set_weights attempt: the vector, the block, and what the chain said."""

    __tablename__ = "weight_submissions"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    submission_hash: Mapped[str] = mapped_column(String(40), unique=True)
    uids: Mapped[list[Any]]
    weights: Mapped[list[Any]]
    block: Mapped[int | None] = mapped_column(BigInteger)
    success: Mapped[bool] = mapped_column(Boolean, index=True)
    message: Mapped[str] = mapped_column(Text)
    version_key: Mapped[int] = mapped_column(BigInteger)
    at: Mapped[datetime]
    reveal_round: Mapped[int | None] = mapped_column(BigInteger)
    reveal_status: Mapped[str | None] = mapped_column(String(16), index=True)
    reveal_block: Mapped[int | None] = mapped_column(BigInteger)


class ValidatorPathRow(Base):
    """Where the validator keeps a file set its episodes need again offline (``storage.paths``)."""

    __tablename__ = "validator_paths"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    path: Mapped[str] = mapped_column(Text)
    recorded_at: Mapped[datetime]
