"""Initial schema: tasks, rounds, episodes, tool log, judgments, miner scores, weight submissions.

Revision ID: 0001
Revises:
Create Date: 2026-11-29

Self-contained on purpose (no import of storage.models): a migration is history and must
not change when the models do. Types are the DDL equivalents of the models' types.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None

AUTO_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _time(name: str, *, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _json(name: str, *, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.JSON(), nullable=nullable)


def _str(name: str, length: int, *, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.String(length=length), nullable=nullable)


def upgrade() -> None:
    """Create every table and index."""
    op.create_table(
        "tasks",
        _str("task_id", 64),
        _str("intent", 16),
        _str("pool", 16),
        _str("leak_cluster", 128, nullable=True),
        _str("catalog_version", 128, nullable=True),
        _str("generator_version", 64),
        _str("difficulty", 16),
        _str("source", 64),
        _json("task"),
        _time("created_at"),
        _time("served_at", nullable=True),
        _time("retired_at", nullable=True),
        sa.PrimaryKeyConstraint("task_id", name=op.f("pk_tasks")),
    )
    op.create_index(op.f("ix_tasks_pool"), "tasks", ["pool"])
    op.create_index(op.f("ix_tasks_leak_cluster"), "tasks", ["leak_cluster"])

    op.create_table(
        "rounds",
        sa.Column("round_id", sa.BigInteger(), autoincrement=False, nullable=False),
        _str("validator_hotkey", 64),
        sa.Column("block", sa.BigInteger(), nullable=True),
        _json("task_ids"),
        _time("started_at"),
        _time("closed_at", nullable=True),
        _json("stats", nullable=True),
        sa.PrimaryKeyConstraint("round_id", name=op.f("pk_rounds")),
    )

    op.create_table(
        "episodes",
        sa.Column("seq", AUTO_ID, autoincrement=True, nullable=False),
        _str("episode_id", 64),
        sa.Column("round_id", sa.BigInteger(), nullable=True),
        _str("task_id", 64),
        _str("miner_hotkey", 64),
        sa.Column("miner_uid", sa.Integer(), nullable=True),
        _str("validator_hotkey", 64),
        _time("started_at"),
        _time("finished_at"),
        _str("end_reason", 32),
        _json("trajectory", nullable=True),
        _str("content_hash", 40),
        _time("stored_at"),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_episodes")),
        sa.UniqueConstraint("episode_id", name=op.f("uq_episodes_episode_id")),
        sa.ForeignKeyConstraint(["round_id"], ["rounds.round_id"], name=op.f("fk_episodes_round_id_rounds")),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.task_id"], name=op.f("fk_episodes_task_id_tasks")),
    )
    op.create_index("ix_episodes_miner_hotkey_seq", "episodes", ["miner_hotkey", "seq"])
    op.create_index(op.f("ix_episodes_round_id"), "episodes", ["round_id"])
    op.create_index(op.f("ix_episodes_task_id"), "episodes", ["task_id"])
    op.create_index(op.f("ix_episodes_stored_at"), "episodes", ["stored_at"])

    op.create_table(
        "tool_log",
        _str("episode_id", 64),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("call_id", sa.String(), nullable=True),
        sa.Column("tool", sa.String(), nullable=False),
        _json("arguments"),
        _json("result"),
        _str("result_hash", 64),
        _str("status", 8),
        _time("started_at"),
        _time("finished_at"),
        _str("nonce_status", 8),
        sa.PrimaryKeyConstraint("episode_id", "seq", name=op.f("pk_tool_log")),
        sa.CheckConstraint("seq >= 0", name=op.f("ck_tool_log_seq_non_negative")),
        sa.ForeignKeyConstraint(
            ["episode_id"],
            ["episodes.episode_id"],
            name=op.f("fk_tool_log_episode_id_episodes"),
            ondelete="CASCADE",
        ),
    )

    op.create_table(
        "judgments",
        _str("content_hash", 40),
        _str("episode_id", 64),
        _str("task_id", 64),
        _str("miner_hotkey", 64),
        sa.Column("success", sa.Boolean(), nullable=False),
        sa.Column("score", sa.Double(), nullable=False),
        _str("axis", 16),
        sa.Column("end_reason", sa.String(), nullable=False),
        sa.Column("reasoning_value", sa.Double(), nullable=True),
        _str("scorer", 64),
        _json("rejects"),
        _json("checks"),
        _json("outcome"),
        _json("process"),
        _json("reasoning"),
        _json("versions"),
        _json("hallucinated_product_ids"),
        _json("fabricated_call_ids"),
        _time("judged_at"),
        sa.PrimaryKeyConstraint("content_hash", name=op.f("pk_judgments")),
        sa.UniqueConstraint("episode_id", name=op.f("uq_judgments_episode_id")),
        sa.CheckConstraint("score >= 0 AND score <= 1", name=op.f("ck_judgments_score_in_unit_interval")),
        sa.ForeignKeyConstraint(
            ["episode_id"],
            ["episodes.episode_id"],
            name=op.f("fk_judgments_episode_id_episodes"),
            ondelete="CASCADE",
        ),
    )

    op.create_table(
        "miner_scores",
        sa.Column("id", AUTO_ID, autoincrement=True, nullable=False),
        _str("hotkey", 64),
        sa.Column("uid", sa.Integer(), nullable=True),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("mean", sa.Double(), nullable=False),
        sa.Column("lower", sa.Double(), nullable=False),
        sa.Column("block", sa.BigInteger(), nullable=False),
        _time("at"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_miner_scores")),
        sa.UniqueConstraint("hotkey", "block", name="uq_miner_scores_hotkey_block"),
    )

    op.create_table(
        "weight_submissions",
        sa.Column("id", AUTO_ID, autoincrement=True, nullable=False),
        _str("submission_hash", 40),
        _json("uids"),
        _json("weights"),
        sa.Column("block", sa.BigInteger(), nullable=True),
        sa.Column("success", sa.Boolean(), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("version_key", sa.BigInteger(), nullable=False),
        _time("at"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_weight_submissions")),
        sa.UniqueConstraint("submission_hash", name=op.f("uq_weight_submissions_submission_hash")),
    )
    op.create_index(op.f("ix_weight_submissions_success"), "weight_submissions", ["success"])


def downgrade() -> None:
    """Drop every table (children first)."""
    for table in (
        "weight_submissions",
        "miner_scores",
        "judgments",
        "tool_log",
        "episodes",
        "rounds",
        "tasks",
    ):
        op.drop_table(table)
