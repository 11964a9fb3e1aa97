"""The ``reasoning_gate`` stage: the reasoning judge's value against the minimum; unscored per policy."""

from __future__ import annotations

from curation.config import CurationConfig
from curation.stages.stage import PASS, UNSCORED, Gate, aside, drop
from judging.types import Judgment


def reasoning_gate(judgment: Judgment, config: CurationConfig) -> Gate:
    """The reasoning judge's value against the minimum; unscored traces per ``config.unscored``."""
    verdict = judgment.reasoning
    if verdict.injection_flagged:
        return drop("injection_flagged")
    if verdict.value is None:
        return {"keep": PASS, "drop": drop("unscored"), "separate": aside(UNSCORED)}[config.unscored]
    return drop("below_min_reasoning") if verdict.value < config.min_reasoning else PASS
