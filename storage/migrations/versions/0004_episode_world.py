"""Worlds downstream: episodes and judgments name the world pack they ran on.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02

A round on a compiled world (``arena.world``) stores, with each episode and its judgment, the
pack's ``world_id`` (``w-`` and 16 hex characters) and ``pack_hash`` (64 hex characters), so
curation and exports can tell worlds apart and an auditor can compile the same pack again.
Rows before this revision, and every static (``sb-1``) episode after it, have both NULL.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None

TABLES = ("episodes", "judgments")


def upgrade() -> None:
    """Add the nullable ``world_id`` (indexed) and ``pack_hash`` columns to episodes and judgments."""
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("world_id", sa.String(length=64), nullable=True))
            batch.add_column(sa.Column("pack_hash", sa.String(length=64), nullable=True))
        op.create_index(op.f(f"ix_{table}_world_id"), table, ["world_id"])


def downgrade() -> None:
    """Drop the world columns.

    A plain ``DROP COLUMN`` (SQLite 3.35+), not a batch copy: copying ``episodes`` into a new
    table drops the old one, and its ``ON DELETE CASCADE`` children (tool log, judgments) with it.
    """
    for table in TABLES:
        op.drop_index(op.f(f"ix_{table}_world_id"), table_name=table)
        op.drop_column(table, "pack_hash")
        op.drop_column(table, "world_id")
