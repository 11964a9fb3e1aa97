"""An evaluation's settings: bounds, the temperature chosen from k, and the summary without the key."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from neurons.evaluation.settings import EvalSettings, settings_summary


def test_the_temperature_defaults_by_k_and_a_given_one_wins() -> None:
    assert EvalSettings(k=1).temperature == 0.0  # greedy: one sample per task
    assert EvalSettings(k=4).temperature == 0.7  # k samples that differ
    assert EvalSettings().temperature == 0.7  # the default k is 8
    assert EvalSettings(k=4, temperature=0.2).temperature == 0.2


def test_bounds_and_unknown_names_are_refused() -> None:
    with pytest.raises(ValidationError):
        EvalSettings(k=0)
    with pytest.raises(ValidationError):
        EvalSettings(task_timeout_s=0.5)
    with pytest.raises(ValidationError):
        EvalSettings(tempreature=0.1)  # type: ignore[call-arg]


def test_the_summary_leaves_the_api_key_out() -> None:
    summary = settings_summary(EvalSettings(api_key="sk-real", k=1))
    assert "api_key" not in summary and summary["k"] == 1 and summary["temperature"] == 0.0
