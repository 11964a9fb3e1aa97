"""The ``convert`` stage's work on one trace: its conversion, as a worker runs it, and its keys before it.

:func:`convert_outcome` is what a conversion worker runs (``curation.conversion.pool``): the
conversion, the converted trace's canonical record and its workspace row, so what crosses
back to the curating process is one compact :class:`Outcome` (a row of strings and numbers),
not the converted trace's models. ``curation.stages.dedup`` counts it, in walk order, whichever
process converted. The walk that decides which traces to convert is ``curation.stages.dedup``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from arena.arguments import split_product_ids
from arena.tools import tool_kind
from curation.chat import normalise
from curation.config import CurationConfig
from curation.conversion.convert import Converter, convert_judged, run_now
from curation.conversion.pruning import prune, questions_scored
from curation.conversion.results import ConversionConfig, Converted
from curation.funnel import Funnel
from curation.signature import Strategy, strategy_of
from curation.stages.stage import AXIS_B, MAIN
from curation.survivor import workspace_row
from curation.workspace import Row
from storage.records import JudgedTrace

# Why the stage could not run on some traces, and what the caller gives to make it run: the
# stage's notes in funnel.json name it, and `arena curate` repeats it on stderr.
NO_INDEX = "no search index"
FIXES = {
    "off": "--index DIR: the search index the traces were judged on (the validator records its own)",
    "unknown_world": "--worlds DIR: the world packs the traces ran on (the validator's world cache)",
}


def conversion_off(funnel: Funnel, config: CurationConfig, *, why: str) -> dict[str, Any]:
    """The ``convert`` stage's note where the run has no converter: why, what it cost, and the fix.

    Without a converter the ``axis`` stage sets aside (``axis_b``) or drops (``axis_<label>``)
    every trace of a label to convert; those are the traces the note counts.
    """
    axis = funnel.stages["axis"]
    aside = axis.aside[AXIS_B] if "B" in config.convert_axes else 0
    dropped = {
        f"axis_{label}": axis.dropped[f"axis_{label}"] for label in config.convert_axes if label != "B"
    }
    return {
        "reason": why,
        "set_aside": {AXIS_B: aside} if aside else {},
        "dropped": {reason: n for reason, n in sorted(dropped.items()) if n},
        "fix": FIXES["off"],
    }


@dataclass(frozen=True)
class Outcome:
    """A conversion as the funnel counts it: the converted row, or None and the drop reason.

    ``pruned_calls`` and ``unpruned``: the conversion's pruning, for the stage's notes.
    """

    row: Row | None
    drop: str | None = None
    pruned_calls: int = 0
    unpruned: int = 0


def convert_outcome(converter: Converter, trace: JudgedTrace, *, config: CurationConfig) -> Outcome:
    """Convert a main-stream trace: its converted row, or the drop (a worker's job)."""
    result = run_now(lambda: convert_judged(trace, converter))
    if not isinstance(result, Converted):
        return Outcome(None, drop=result.reason)
    converted = trace.model_copy(
        update={"trajectory": result.trajectory, "tool_log": result.tool_log, "judgment": result.judgment}
    )
    record = normalise(converted)
    if isinstance(record, str):  # the converter writes the canonical schema: a bug, counted not raised
        return Outcome(None, drop=f"normalise:{record}")
    row = workspace_row(converted, record, MAIN, config, result.provenance)
    return Outcome(row, pruned_calls=len(result.pruned), unpruned=int(result.unpruned))


def prospective_keys(trace: JudgedTrace, config: ConversionConfig) -> Strategy:
    """The dedup keys ``trace`` will have once converted: those of the calls conversion keeps.

    A converted trajectory makes exactly the kept calls of the log, with their logged arguments,
    and answers with the last ``recommend_product`` among them (pruning keeps the answer), so
    dedup can screen a source before paying for its conversion. Where the conversion later
    keeps every call (a pruned replay that differed), its own keys are checked again.
    """
    entries = tuple(sorted(trace.tool_log, key=lambda e: e.seq))
    kept = prune(entries, keep_questions=questions_scored(trace.judgment)).kept if config.prune else entries
    answers = [e.arguments.get("product_ids") for e in kept if tool_kind(e.tool) == "answer"]
    ids, _ = split_product_ids(answers[-1] if answers else None)
    return strategy_of([(e.tool, dict(e.arguments)) for e in kept], ids)


__all__ = ["Outcome", "convert_outcome", "prospective_keys"]
