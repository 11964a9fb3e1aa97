"""Shared fixtures: the 20-product fixture catalog and its path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from arena.index import SearchIndex

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def fixture_catalog_path() -> Path:
    """Path of the hand-made 20-product catalog (plain product JSONL)."""
    return FIXTURES / "catalog.jsonl"


@pytest.fixture(scope="session")
def fixture_index_dir(fixture_catalog_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A search index built once from the fixture catalog (read-only for tests)."""
    from arena.index import build_index

    index_dir = tmp_path_factory.mktemp("fixture-index") / "index"
    build_index([fixture_catalog_path], index_dir)
    return index_dir


@pytest.fixture(scope="session")
def fixture_index(fixture_index_dir: Path) -> Iterator[SearchIndex]:
    """The fixture catalog's search index, opened once for the session."""
    from arena.index import open_index

    index = open_index(fixture_index_dir)
    yield index
    index.close()
