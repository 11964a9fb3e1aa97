"""Engines, sessions, write transactions, and the schema's life cycle (Alembic; unknown schemas refused).

SQLite (the embedded default) runs in WAL mode with ``synchronous=FULL`` (a commit is on disk
when it returns), foreign keys on, and a busy timeout so concurrent writers wait instead of
failing. PostgreSQL (production) goes through psycopg 3.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.resources import files
from pathlib import Path
from typing import Any, TypeVar

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from storage.errors import SchemaError, StorageError

_T = TypeVar("_T")

logger = logging.getLogger(__name__)

SQLITE_BUSY_TIMEOUT_MS = 30_000
# Serialises concurrent `upgrade` calls on PostgreSQL (an arbitrary, fixed advisory lock key).
PG_MIGRATION_LOCK = 7_291_004_113
# Execution option read by the SQLite BEGIN hook: "IMMEDIATE" for write transactions.
SQLITE_BEGIN = "sqlite_begin"


def migrations_dir() -> Path:
    """Return the directory of the Alembic migrations shipped inside the package."""
    return Path(str(files("storage") / "migrations"))


def make_engine(url: str, **kwargs: Any) -> Engine:
    """Create an engine for a SQLite file or a PostgreSQL server.

    ``postgresql://`` and ``postgres://`` URLs are mapped to the psycopg 3 driver.

    Args:
        url: ``sqlite:///path/to/arena.db`` or ``postgresql+psycopg://user:pw@host/db``.
        **kwargs: passed to ``sqlalchemy.create_engine`` (e.g. ``echo=True``).

    Returns:
        The engine; SQLite connections come configured (WAL, synchronous FULL, foreign keys).

    Raises:
        StorageError: for a URL that is neither SQLite nor PostgreSQL.
    """
    parsed = make_url(url.replace("postgres://", "postgresql://", 1))
    backend = parsed.get_backend_name()
    if backend == "postgresql":
        if parsed.drivername in ("postgresql", "postgresql+psycopg2"):
            parsed = parsed.set(drivername="postgresql+psycopg")
        return create_engine(parsed, pool_pre_ping=True, **kwargs)
    if backend != "sqlite":
        raise StorageError(f"unsupported database URL {parsed.render_as_string(hide_password=True)!r}")
    engine = create_engine(parsed, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}, **kwargs)
    event.listen(engine, "connect", _configure_sqlite)
    event.listen(engine, "begin", _begin_sqlite)
    return engine


def _configure_sqlite(dbapi_connection: Any, _record: Any) -> None:
    # Take transaction control away from the sqlite3 module (it would not BEGIN before a
    # SELECT); _begin_sqlite emits BEGIN itself, so reads and writes share one snapshot.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    finally:
        cursor.close()


def _begin_sqlite(conn: Connection) -> None:
    # Writers take the lock at BEGIN (IMMEDIATE): a deferred transaction that reads and then
    # writes fails with SQLITE_BUSY when another writer got in between; waiting is better.
    mode = "IMMEDIATE" if conn.get_execution_options().get(SQLITE_BEGIN) == "IMMEDIATE" else "DEFERRED"
    conn.exec_driver_sql(f"BEGIN {mode}")


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    """Return the session factory for ``engine`` (objects stay readable after commit)."""
    return sessionmaker(engine, expire_on_commit=False)


def in_session(sessions: sessionmaker[Session], function: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """Call ``function(session, *args, **kwargs)`` in a fresh session, closed after (for a worker thread)."""
    with sessions() as session:
        return function(session, *args, **kwargs)


@contextmanager
def write_transaction(session: Session, *, what: str) -> Iterator[None]:
    """Run the block as one write transaction: commit at the end, roll everything back on any error.

    A read transaction the caller left open is ended first, so the write starts from a fresh
    snapshot (on SQLite it takes the write lock at BEGIN). Database errors leave as
    ``StorageError`` naming ``what`` was being written.
    """
    if session.in_transaction():
        session.commit()  # only reads can be pending: rows never leave storage
    try:
        session.connection(execution_options={SQLITE_BEGIN: "IMMEDIATE"})
        yield
        session.commit()
    except SQLAlchemyError as exc:
        session.rollback()
        raise StorageError(f"could not write {what}: {describe(exc)}") from exc
    except BaseException:
        session.rollback()
        raise


def describe(exc: BaseException) -> str:
    """Summarise a database error in one line (the driver's message, without SQL or parameters)."""
    orig = getattr(exc, "orig", None) or exc
    lines = str(orig).strip().splitlines()
    return f"{type(orig).__name__}: {lines[0] if lines else ''}"


def _alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """Return the newest schema revision this code knows."""
    heads = ScriptDirectory.from_config(_alembic_config()).get_heads()
    if len(heads) != 1:
        raise SchemaError(f"the shipped migrations have {len(heads)} heads, expected exactly one")
    return heads[0]


def _known_revisions() -> set[str]:
    script = ScriptDirectory.from_config(_alembic_config())
    return {rev.revision for rev in script.walk_revisions()}


def current_revision(engine: Engine) -> str | None:
    """Return the database's schema revision, or None where it has no ``alembic_version`` table."""
    try:
        with engine.connect() as conn:
            if not inspect(conn).has_table("alembic_version"):
                return None
            heads = MigrationContext.configure(conn).get_current_heads()
    except SQLAlchemyError as exc:
        raise StorageError(f"cannot read the schema version: {exc}") from exc
    if len(heads) > 1:
        raise SchemaError(f"database has several schema heads {sorted(heads)}; it was not written by us")
    return heads[0] if heads else None


def _refuse_unknown(current: str | None) -> None:
    if current is not None and current not in _known_revisions():
        raise SchemaError(
            f"database schema revision {current!r} is unknown to this version of shopping-arena "
            f"(newest known: {head_revision()!r}); it was probably written by a newer release: "
            "upgrade the software, never the other way round"
        )


def upgrade(engine: Engine) -> str:
    """Migrate the database to the newest schema (a no-op where it is already there).

    Creates every table on an empty database. Safe to call from several processes at once.

    Returns:
        The revision the database is now at.

    Raises:
        SchemaError: the database carries a revision this code does not know (a newer release).
        StorageError: a migration failed (nothing of it is applied: migrations are transactional).
    """
    _refuse_unknown(current_revision(engine))
    try:
        with engine.connect() as conn:
            conn = conn.execution_options(**{SQLITE_BEGIN: "IMMEDIATE"})
            with conn.begin():
                if conn.dialect.name == "postgresql":
                    conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": PG_MIGRATION_LOCK})
                command.upgrade(_alembic_config(conn), "head")
    except (SQLAlchemyError, CommandError) as exc:
        raise StorageError(f"schema migration failed: {exc}") from exc
    revision = check_schema(engine)
    logger.info("schema upgraded revision=%s", revision)
    return revision


def check_schema(engine: Engine) -> str:
    """Refuse to run on a schema this code does not know exactly.

    Returns:
        The current (head) revision.

    Raises:
        SchemaError: no ``alembic_version`` table (never migrated: call ``upgrade``), an unknown
            or newer revision, or a known revision behind head (call ``upgrade``).
    """
    url = engine.url.render_as_string(hide_password=True)
    current = current_revision(engine)
    if current is None:
        raise SchemaError(
            f"database {url} has no schema version (no alembic_version table or no revision in it); "
            "run the migrations first (storage.db.upgrade, or start the validator with migrations enabled)"
        )
    _refuse_unknown(current)
    head = head_revision()
    if current != head:
        raise SchemaError(f"database {url} is at schema revision {current!r}, behind {head!r}: run upgrade")
    return current
