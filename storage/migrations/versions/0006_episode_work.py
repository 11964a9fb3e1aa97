"""The work each round episode did: ``episodes.work_hash``.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-05

Copies share credit (``judging.duplicates``): the weights read each scored episode with the
address of its work (the results its calls got from the tool server, and its answer, on its
task), so that hotkeys that copy one another split one credit. NULL for every episode before
this revision (each keeps its own credit, as it did) and for episodes outside a round.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Add the nullable column."""
    with op.batch_alter_table("episodes") as batch:
        batch.add_column(sa.Column("work_hash", sa.String(length=64), nullable=True))


def downgrade() -> None:
    """Drop the column (a plain ``DROP COLUMN``: a batch copy of ``episodes`` would cascade)."""
    op.drop_column("episodes", "work_hash")
