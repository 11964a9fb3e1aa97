"""The lines ``arena convert`` reads and writes: judged traces in, conversions (or typed drops) out.

Input: one ``JudgedTrace`` per line (``JudgedTrace.model_dump_json()``: task, trajectory, the
validator's tool log, the Judgment, the episode), or the database. Output: one JSON object per
source trace, ``status`` ``converted`` (the trajectory in its wire form, the kept tool log, the
re-judged Judgment, the provenance columns, the pruned calls) or ``dropped`` (the typed reason
and a detail). A line that does not parse is a drop too (``unreadable``), never an exception.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import ValidationError

from curation.conversion.convert import Converter, convert_judged, run_now
from curation.conversion.results import Conversion, Converted
from storage.records import JudgedTrace

UNREADABLE = "unreadable"


def read_traces(lines: Iterable[str]) -> Iterator[JudgedTrace | str]:
    """Each non-blank line as a judged trace, or the reason it is not one (``unreadable: ...``)."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield JudgedTrace.model_validate_json(line)
        except ValidationError as exc:
            yield f"line {number}: {exc.error_count()} problem(s), first: {exc.errors()[0]['msg']}"


def conversion_line(trace: JudgedTrace, conversion: Conversion) -> dict[str, Any]:
    """The output object for one source trace."""
    head: dict[str, Any] = {"episode_id": trace.episode.episode_id, "task_id": trace.task.task_id}
    if not isinstance(conversion, Converted):
        return {**head, "status": "dropped", "reason": conversion.reason, "detail": conversion.detail}
    return {
        **head,
        "status": "converted",
        **conversion.provenance.columns(),
        "pruned": [[seq, why] for seq, why in conversion.pruned],
        "unpruned": conversion.unpruned,
        "rewrites": conversion.rewrites,
        "trajectory": conversion.trajectory.to_wire(),
        "tool_log": [entry.model_dump(mode="json") for entry in conversion.tool_log],
        "judgment": conversion.judgment.model_dump(mode="json"),
    }


def converted_line(converter: Converter, trace: JudgedTrace) -> dict[str, Any]:
    """Convert one trace and return its output object (a conversion worker's job: the line crosses back)."""
    return conversion_line(trace, run_now(lambda: convert_judged(trace, converter)))
