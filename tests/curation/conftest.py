"""Curation fixtures: one database per test (``tests.databases``), on SQLite and on PostgreSQL."""

from tests.databases import db_url, engine, session

__all__ = ["db_url", "engine", "session"]
