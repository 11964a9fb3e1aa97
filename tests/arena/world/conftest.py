"""A small synthetic base index for world tests (3000 products, built once per session)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.catalog import write_products
from arena.index import SearchIndex, build_index, open_index
from arena.synth import iter_synth_products

WORLD_BASE_PRODUCTS = 3000


@pytest.fixture(scope="session")
def world_base_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The base index directory."""
    root = tmp_path_factory.mktemp("world-base")
    write_products(iter_synth_products(WORLD_BASE_PRODUCTS, 7), root / "catalog.jsonl")
    build_index([root / "catalog.jsonl"], root / "index")
    return root / "index"


@pytest.fixture(scope="session")
def world_base(world_base_dir: Path) -> Iterator[SearchIndex]:
    """The base index, opened once."""
    index = open_index(world_base_dir)
    yield index
    index.close()
