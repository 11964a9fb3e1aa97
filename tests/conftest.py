"""Shared fixtures: the 20-product fixture catalog and its path."""

from __future__ import annotations

from pathlib import Path

import pytest

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
