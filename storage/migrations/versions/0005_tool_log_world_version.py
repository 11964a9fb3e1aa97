"""The world version of each tool result: ``tool_log.world_version``.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02

A world pack may change a price or a stock level during an episode (``arena.world.changes``);
each logged call then records the world version its result came from, so grounding can
reconcile a cited price against that version and the outcome is judged at the answer's.
NULL for calls over a static catalog (every row before this revision).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Add the nullable column."""
    with op.batch_alter_table("tool_log") as batch:
        batch.add_column(sa.Column("world_version", sa.Integer(), nullable=True))


def downgrade() -> None:
    """Drop the column."""
    with op.batch_alter_table("tool_log") as batch:
        batch.drop_column("world_version")
