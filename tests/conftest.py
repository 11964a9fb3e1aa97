"""Shared fixtures: the fixture catalog, ShoppingBench task files, search indexes, a throwaway PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from arena.catalog import write_products
from arena.synth import iter_synth_products
from tests.postgres import postgres_server, postgres_url  # noqa: F401  (a throwaway PostgreSQL for any test)

if TYPE_CHECKING:
    from arena.index import SearchIndex

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def fixture_catalog_path() -> Path:
    """Path of the hand-made 20-product catalog (plain product JSONL)."""
    return FIXTURES / "catalog.jsonl"


def _shoppingbench_dir() -> Path | None:
    # The shared data lives next to the repository (../shared) in a checkout, else at /work/shared.
    root = Path(__file__).resolve().parents[1]
    for candidate in (root.parent / "shared/data/shoppingbench", Path("/work/shared/data/shoppingbench")):
        if (candidate / "synthesize_product_test.jsonl").is_file():
            return candidate
    return None


@pytest.fixture(scope="session")
def shoppingbench_dir() -> Path:
    """Directory holding ShoppingBench's four public test task files (skips the test if absent)."""
    found = _shoppingbench_dir()
    if found is None:
        pytest.skip("ShoppingBench task files not found in ../shared/data/shoppingbench or /work/shared")
    return found


@pytest.fixture(scope="session")
def shoppingbench_files(shoppingbench_dir: Path) -> list[Path]:
    """The four ShoppingBench task files, in a fixed order."""
    return sorted(shoppingbench_dir.glob("synthesize_*_test.jsonl"))


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


WORLD_BASE_PRODUCTS = 3000


@pytest.fixture(scope="session")
def world_base_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small base index for world tests (3000 synthetic products, seed 7)."""
    from arena.index import build_index

    root = tmp_path_factory.mktemp("world-base")
    write_products(iter_synth_products(WORLD_BASE_PRODUCTS, 7), root / "catalog.jsonl")
    build_index([root / "catalog.jsonl"], root / "index")
    return root / "index"


@pytest.fixture(scope="session")
def world_base(world_base_dir: Path) -> Iterator[SearchIndex]:
    """The world base index, opened once for the session."""
    from arena.index import open_index

    index = open_index(world_base_dir)
    yield index
    index.close()


@pytest.fixture(scope="session")
def world_pack_dir(world_base: SearchIndex, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A world pack over the world base whose changes reach some tasks mid-episode (read-only for tests)."""
    from arena.world.compile import compile_world
    from arena.world.pack import save_pack

    directory = tmp_path_factory.mktemp("world-pack") / "pack"
    save_pack(compile_world("changes-both", world_base), directory)
    return directory
