"""The ``hard_rejects`` stage: a trace the judge rejected outright, or one that did not complete, stops."""

from __future__ import annotations

from curation.stages.stage import PASS, Gate, TraceContext, drop
from storage.records import JudgedTrace


def hard_reject(trace: JudgedTrace, context: TraceContext) -> Gate:
    """Drop a trace with a judge's reject (the first named), a fabricated result, or an incomplete end."""
    judgment = trace.judgment
    if judgment.rejects:
        return drop(f"reject:{judgment.rejects[0]}")
    if judgment.fabricated:
        return drop("fabricated")
    if trace.episode.end != "completed" or judgment.end != "completed":
        return drop(f"end:{trace.episode.end if trace.episode.end != 'completed' else judgment.end}")
    return PASS
