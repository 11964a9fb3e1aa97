"""Where the validator keeps its search index and world packs: ``validator_paths``.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-05

A validator records at start-up the directory of the search index its episodes are judged on
and of the world packs they run on (one row each, ``index`` and ``worlds``: the absolute path
on its machine), so curating its database later (``arena curate --db URL``) converts its traces
against them without being told where they are. Empty for a database no validator opened since.
Self-contained (no import of storage.models), as every revision.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Create the table."""
    op.create_table(
        "validator_paths",
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_validator_paths")),
    )


def downgrade() -> None:
    """Drop the table."""
    op.drop_table("validator_paths")
