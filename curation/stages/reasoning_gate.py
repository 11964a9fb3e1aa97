"""The ``reasoning_gate`` stage: the reasoning judge's value against the minimum; unscored per policy."""

from __future__ import annotations

from curation.stages.stage import PASS, UNSCORED, Gate, TraceContext, aside, drop
from storage.records import JudgedTrace


def reasoning_gate(trace: JudgedTrace, context: TraceContext) -> Gate:
    """The reasoning judge's value against ``min_reasoning``; an unscored trace per ``unscored``."""
    verdict, config = trace.judgment.reasoning, context.config
    if verdict.injection_flagged:
        return drop("injection_flagged")
    if verdict.value is None:
        return {"keep": PASS, "drop": drop("unscored"), "separate": aside(UNSCORED)}[config.unscored]
    return drop("below_min_reasoning") if verdict.value < config.min_reasoning else PASS
