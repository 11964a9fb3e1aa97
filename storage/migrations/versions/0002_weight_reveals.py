"""Weight reveals: each timelocked commit's drand reveal round and whether its weights landed.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01

On a commit-reveal subnet a submission is a sealed commit; the chain opens it at its reveal
round and drops it silently if the reveal fails. ``reveal_round`` is that round,
``reveal_status`` what the check after it found (pending, revealed, missing, superseded; NULL
for plain weights) and ``reveal_block`` the block it was checked at.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Add the reveal columns (nullable: rows before them are plain submissions)."""
    with op.batch_alter_table("weight_submissions") as batch:
        batch.add_column(sa.Column("reveal_round", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("reveal_status", sa.String(length=16), nullable=True))
        batch.add_column(sa.Column("reveal_block", sa.BigInteger(), nullable=True))
    op.create_index(op.f("ix_weight_submissions_reveal_status"), "weight_submissions", ["reveal_status"])


def downgrade() -> None:
    """Drop the reveal columns."""
    op.drop_index(op.f("ix_weight_submissions_reveal_status"), table_name="weight_submissions")
    with op.batch_alter_table("weight_submissions") as batch:
        batch.drop_column("reveal_block")
        batch.drop_column("reveal_status")
        batch.drop_column("reveal_round")
