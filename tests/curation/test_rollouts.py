"""Rollout rows: the provenance columns a rollout row carries, and the validator that holds them to it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from curation.errors import RowError
from curation.formats import sft, validate_row
from curation.formats.format import ROLLOUT_COLUMNS
from curation.rollouts import RolloutSource, rollout_formats
from tests.curation.test_export import _sft

SOURCE = RolloutSource(policy="tuned.gguf", weights_hash="sha256:ab", k=8)
SFT, KTO = rollout_formats(SOURCE)


def _rollout() -> dict[str, Any]:
    return {**_sft(), **SOURCE.columns()}


def test_a_rollout_row_is_a_native_row_with_its_policy_weights_and_k() -> None:
    row = _rollout()
    validate_row(SFT, row)
    assert (row["origin"], row["source_hash"], row["writer"]) == ("rollout", None, None)
    assert set(SFT.features) == set(row) and ROLLOUT_COLUMNS == ("policy", "weights_hash", "k")
    validate_row(SFT, {**row, "weights_hash": None})  # an endpoint's weights may be unknown


@pytest.mark.parametrize(
    ("change", "fault"),
    [
        ({"k": 0}, "k is a positive integer"),
        ({"k": True}, "k is a positive integer"),
        ({"policy": ""}, "names its policy"),
        ({"weights_hash": 5}, "weights_hash is a string or null"),
    ],
)
def test_a_rollout_row_without_its_provenance_is_refused(change: dict[str, Any], fault: str) -> None:
    with pytest.raises(RowError, match=fault):
        validate_row(SFT, {**json.loads(json.dumps(_rollout())), **change})


def test_the_rollout_columns_belong_to_rollout_rows_only() -> None:
    native = _sft()
    with pytest.raises(RowError, match="columns"):
        validate_row(sft.FORMAT, {**native, "policy": "p", "weights_hash": None, "k": 1})
    missing = {k: v for k, v in _rollout().items() if k != "k"}
    with pytest.raises(RowError, match="columns"):
        validate_row(SFT, missing)
