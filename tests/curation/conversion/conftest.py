"""Conversion fixtures: judged scripted traces on generated tasks over the session's synthetic index."""

from __future__ import annotations

import pytest

from arena.index import SearchIndex
from storage.records import JudgedTrace
from tests.curation.conversion.world import scripted_traces


@pytest.fixture(scope="session")
def harness_traces(synth_index: SearchIndex) -> list[JudgedTrace]:
    """Forty judged episodes of the scripted harness (successes and failures), one task each."""
    return scripted_traces(synth_index, 40, seed=3)
