"""Migrations: up from empty on both databases, models and migrations agree, unknown schemas refused."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import setuptools
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, inspect, text

from judging.types import OUTAGE_CAUSES, Evidence
from storage.db import (
    _alembic_config,
    check_schema,
    current_revision,
    head_revision,
    make_engine,
    make_sessionmaker,
    migrations_dir,
    upgrade,
)
from storage.errors import SchemaError, StorageError
from storage.mapping import row_to_judgment
from storage.models import Base, JudgmentRow

TABLES = {
    "tasks",
    "rounds",
    "episodes",
    "tool_log",
    "judgments",
    "miner_scores",
    "weight_submissions",
    "validator_paths",
}


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


# Judgments exactly as revision 0001 stored them (the judge of that release wrote them: every
# check and evidence shape it produced, unscored causes "disabled", "skipped: ...", "timeout: ...",
# "error: ...", "unparseable: ...", injections, unanswered episodes).
LEGACY = Path(__file__).resolve().parents[1] / "fixtures" / "legacy" / "judgments-0001.jsonl"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _store_at_0001(engine: Engine, judgments: list[dict[str, Any]]) -> None:
    """Migrate to 0001 only and store the judgments (with a task and an episode each) as it did."""
    meta = sa.MetaData()
    tables = {name: sa.Table(name, meta, autoload_with=engine) for name in ("tasks", "episodes", "judgments")}
    with engine.begin() as conn:
        conn.execute(
            tables["tasks"].insert(),
            [
                {
                    "task_id": "t-legacy",
                    "intent": "product",
                    "pool": "held_out",
                    "generator_version": "import",
                    "difficulty": "medium",
                    "source": "generated",
                    "task": {},
                    "created_at": T0,
                }
            ],
        )
        conn.execute(
            tables["episodes"].insert(),
            [
                {
                    "episode_id": j["episode_id"],
                    "task_id": "t-legacy",
                    "miner_hotkey": j["miner_hotkey"],
                    "validator_hotkey": "5V",
                    "started_at": T0,
                    "finished_at": T0,
                    "end_reason": j["end"],
                    "content_hash": "e-legacy",
                    "stored_at": T0,
                }
                for j in judgments
            ],
        )
        conn.execute(
            tables["judgments"].insert(),
            [
                {
                    **{k: v for k, v in j.items() if k != "end"},
                    "end_reason": j["end"],
                    "axis": j["axis"],
                    "reasoning_value": j["reasoning"]["value"],
                    "scorer": j["versions"]["scorer"],
                    "judged_at": T0,
                }
                for j in judgments
            ],
        )


def test_judgments_stored_by_revision_0001_load_after_the_upgrade(empty: Engine) -> None:
    legacy = [json.loads(line) for line in LEGACY.read_text(encoding="utf-8").splitlines()]
    with empty.begin() as conn:
        command.upgrade(_alembic_config(conn), "0001")
    _store_at_0001(empty, legacy)
    assert upgrade(empty) == head_revision()
    with make_sessionmaker(empty)() as session:
        rows = {row.episode_id: row for row in session.scalars(sa.select(JudgmentRow))}
        loaded = {episode_id: row_to_judgment(row) for episode_id, row in rows.items()}  # hashes verify
    assert set(loaded) == {j["episode_id"] for j in legacy}
    for old in legacy:
        new = loaded[old["episode_id"]]
        text = old["reasoning"]["unscored_cause"]
        unscored = new.reasoning.unscored
        assert (str(unscored) if unscored else None) == text  # the typed cause says what the string said
        assert rows[old["episode_id"]].reasoning_unscored == (unscored.cause if unscored else None)
        assert new.reasoning_outage == (text is not None and text.split(":")[0] in OUTAGE_CAUSES)
        # Everything else is as it was, and every stored check reads back with typed evidence.
        same = new.model_dump(mode="json", exclude={"content_hash", "reasoning", "checks"})
        assert same == {k: v for k, v in old.items() if k not in ("content_hash", "reasoning", "checks")}
        assert [(c.name, c.value, c.explanation) for c in new.checks] == [
            (c["name"], c["value"], c["explanation"]) for c in old["checks"]
        ]
        assert all(isinstance(c.evidence, Evidence) for c in new.checks)


def test_the_typed_cause_migration_goes_down_to_the_old_strings(empty: Engine) -> None:
    legacy = [json.loads(line) for line in LEGACY.read_text(encoding="utf-8").splitlines()]
    with empty.begin() as conn:
        command.upgrade(_alembic_config(conn), "0001")
    _store_at_0001(empty, legacy)
    upgrade(empty)
    with empty.begin() as conn:
        command.downgrade(_alembic_config(conn), "0001")
    meta = sa.MetaData()
    judgments = sa.Table("judgments", meta, autoload_with=empty)
    with empty.connect() as conn:
        back = {row.episode_id: row for row in conn.execute(sa.select(judgments))}
    for old in legacy:
        row = back[old["episode_id"]]
        assert row.content_hash == old["content_hash"] and row.reasoning == old["reasoning"]
        assert row.checks == old["checks"]
