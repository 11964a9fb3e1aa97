"""Storage fixtures: one database per test, on SQLite and on a real PostgreSQL server."""

from tests.databases import db_url, engine, session

__all__ = ["db_url", "engine", "session"]
