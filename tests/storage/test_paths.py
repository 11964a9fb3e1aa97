"""The validator's recorded paths: written at start-up, the newest start's win, read back as given."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy.orm import Session

from storage.paths import ValidatorPaths, read_paths, record_paths

T0 = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


def test_a_database_no_validator_opened_records_nothing(session: Session) -> None:
    assert read_paths(session) == ValidatorPaths()


def test_the_newest_start_wins_and_paths_are_absolute(session: Session, tmp_path: Path) -> None:
    record_paths(session, index=tmp_path / "index", worlds=tmp_path / "worlds", at=T0)
    assert read_paths(session) == ValidatorPaths(tmp_path / "index", tmp_path / "worlds", T0)
    later = T0 + timedelta(minutes=5)
    record_paths(session, index=Path("relative/index"), worlds=tmp_path / "packs", at=later)
    paths = read_paths(session)
    assert paths.index == Path.cwd() / "relative" / "index" and paths.index.is_absolute()
    assert paths.worlds == tmp_path / "packs" and paths.recorded_at == later
