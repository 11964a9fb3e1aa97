"""The ``hard_rejects`` stage: a trace the judge rejected outright, or one that did not complete, stops."""

from __future__ import annotations

from storage.records import JudgedTrace


def hard_reject(trace: JudgedTrace) -> str | None:
    """The reason a trace is rejected outright, or None."""
    judgment = trace.judgment
    if judgment.rejects:
        return f"reject:{judgment.rejects[0]}"
    if judgment.fabricated:
        return "fabricated"
    if trace.episode.end != "completed" or judgment.end != "completed":
        return f"end:{trace.episode.end if trace.episode.end != 'completed' else judgment.end}"
    return None
