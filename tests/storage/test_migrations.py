"""Migrations: up from empty on both databases, models and migrations agree, unknown schemas refused."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
import setuptools
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, inspect, text

from storage.db import (
    _alembic_config,
    check_schema,
    current_revision,
    head_revision,
    make_engine,
    migrations_dir,
    upgrade,
)
from storage.errors import SchemaError, StorageError
from storage.models import Base

TABLES = {"tasks", "rounds", "episodes", "tool_log", "judgments", "miner_scores", "weight_submissions"}


@pytest.fixture()
def empty(db_url: str) -> Iterator[Engine]:
    engine = make_engine(db_url)
    yield engine
    engine.dispose()


def test_upgrade_from_empty_creates_the_schema(empty: Engine) -> None:
    assert current_revision(empty) is None
    assert upgrade(empty) == head_revision()
    assert TABLES <= set(inspect(empty).get_table_names())
    assert check_schema(empty) == head_revision()


def test_models_and_migrations_agree(empty: Engine) -> None:
    upgrade(empty)
    with empty.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []


def test_migrations_go_down_and_up_again(empty: Engine) -> None:
    upgrade(empty)
    with empty.begin() as conn:
        command.downgrade(_alembic_config(conn), "base")
    assert not TABLES & set(inspect(empty).get_table_names())
    assert upgrade(empty) == head_revision()


def test_check_schema_refuses_a_database_never_migrated(empty: Engine) -> None:
    with pytest.raises(SchemaError, match="no schema version"):
        check_schema(empty)


def test_check_schema_refuses_an_empty_version_table(empty: Engine) -> None:
    upgrade(empty)
    with empty.begin() as conn:
        conn.execute(text("DELETE FROM alembic_version"))
    with pytest.raises(SchemaError, match="no schema version"):
        check_schema(empty)


def test_unknown_revisions_are_refused_by_check_and_upgrade(empty: Engine) -> None:
    upgrade(empty)
    with empty.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = 'f00dfeed'"))
    with pytest.raises(SchemaError, match="'f00dfeed' is unknown.*newer release"):
        check_schema(empty)
    with pytest.raises(SchemaError, match="unknown"):
        upgrade(empty)
    with empty.connect() as conn:  # upgrade touched nothing
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == "f00dfeed"


def test_concurrent_upgrades_from_empty_both_succeed(empty: Engine) -> None:
    results: list[str | BaseException] = []

    def run() -> None:
        try:
            results.append(upgrade(empty))
        except StorageError as exc:
            results.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [head_revision()] * 3


def test_migrations_ship_as_package_data() -> None:
    root = migrations_dir()
    assert (root / "env.py").is_file() and (root / "script.py.mako").is_file()
    assert list((root / "versions").glob("0001_*.py"))
    packages = setuptools.find_packages(where=str(root.parents[1]), include=["storage*"])
    assert {"storage.migrations", "storage.migrations.versions"} <= set(packages)
