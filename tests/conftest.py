"""Shared fixtures: the 20-product fixture catalog and its path."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def fixture_catalog_path() -> Path:
    """Path of the hand-made 20-product catalog (plain product JSONL)."""
    return FIXTURES / "catalog.jsonl"
