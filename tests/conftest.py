"""Shared fixtures: the 20-product fixture catalog and its path; a throwaway PostgreSQL server."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.postgres import postgres_server, postgres_url  # noqa: F401  (a throwaway PostgreSQL for any test)

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def fixture_catalog_path() -> Path:
    """Path of the hand-made 20-product catalog (plain product JSONL)."""
    return FIXTURES / "catalog.jsonl"
