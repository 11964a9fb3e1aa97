"""Alembic environment: runs migrations on the connection ``storage.db.upgrade`` hands over."""

from __future__ import annotations

from alembic import context

from storage.models import Base

connection = context.config.attributes.get("connection")
if connection is None:
    # No alembic.ini and no offline SQL mode: the schema is migrated by storage.db.upgrade only.
    raise RuntimeError("run migrations through storage.db.upgrade(engine)")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=True,  # SQLite cannot ALTER most things; batch mode copies the table
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
