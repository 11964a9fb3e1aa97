"""The inference gateway's record: table ``inference_log`` (one row per exchange of an episode).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-05

The validator's inference gateway (``arena.gateway``) forwards an episode's chat-completion
requests to the miner's model and logs each request's and response's bytes, its status and
whose its outcome is (``arena.inference.ExchangeOutcome``). A tool call matching a served
completion's call is attested in the tool log (``nonce_status``); these rows are the evidence.
``outcome`` is indexed: the weights query leaves out episodes with a ``gateway_error``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Create the table."""
    op.create_table(
        "inference_log",
        sa.Column("episode_id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("upstream", sa.String(), nullable=False),
        sa.Column("request", sa.JSON(), nullable=False),
        sa.Column("response", sa.JSON(), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("tool_calls", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("episode_id", "seq", name=op.f("pk_inference_log")),
        sa.CheckConstraint("seq >= 0", name=op.f("ck_inference_log_seq_non_negative")),
        sa.ForeignKeyConstraint(
            ["episode_id"],
            ["episodes.episode_id"],
            name=op.f("fk_inference_log_episode_id_episodes"),
            ondelete="CASCADE",
        ),
    )
    op.create_index(op.f("ix_inference_log_outcome"), "inference_log", ["outcome"])


def downgrade() -> None:
    """Drop the table."""
    op.drop_index(op.f("ix_inference_log_outcome"), table_name="inference_log")
    op.drop_table("inference_log")
