"""Database fixtures for the storage and curation tests: one database per test, SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from storage.db import make_engine, make_sessionmaker, upgrade

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database (no schema), as a URL: a SQLite file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'arena.db'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture()
def engine(db_url: str) -> Iterator[Engine]:
    """An engine on a database migrated to head."""
    engine = make_engine(db_url)
    upgrade(engine)
    yield engine
    engine.dispose()


@pytest.fixture()
def session(engine: Engine) -> Iterator[Session]:
    with make_sessionmaker(engine)() as session:
        yield session
