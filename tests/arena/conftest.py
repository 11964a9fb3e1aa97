"""Fixtures of the arena tests: a real search index over a synthetic catalog."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from arena.catalog import write_products
from arena.synth import iter_synth_products

if TYPE_CHECKING:
    from arena.index import SearchIndex

SYNTH_PRODUCTS = 20000


@pytest.fixture(scope="session")
def synth_index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A search index built from a 20000-product synthetic catalog (seed 21)."""
    from arena.index import build_index

    root = tmp_path_factory.mktemp("synth-index")
    catalog = root / "catalog.jsonl"
    write_products(iter_synth_products(SYNTH_PRODUCTS, 21), catalog)
    build_index([catalog], root / "index")
    return root / "index"


@pytest.fixture(scope="session")
def synth_index(synth_index_dir: Path) -> Iterator[SearchIndex]:
    """The synthetic index, opened once for the session."""
    from arena.index import open_index

    index = open_index(synth_index_dir)
    yield index
    index.close()
