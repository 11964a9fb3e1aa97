"""Alembic migrations of the storage schema (package data, run by storage.db.upgrade)."""
