"""The ``axis`` stage: labels taken as they are go on, labels to convert go on to conversion, B goes aside.

A trace is curated under its own axis label, overruled when its miner is labelled B
(``effective_axis``).
"""

from __future__ import annotations

from curation.config import CurationConfig
from curation.stages.stage import AXIS_B, PASS, Gate, TraceContext, aside, drop
from judging.types import ATTESTED, Axis, Judgment
from storage.records import JudgedTrace


def effective_axis(judgment: Judgment, miner_axis: Axis | None) -> Axis:
    """The axis a trace is curated under: its own label, overruled when its miner is labelled B.

    One trajectory of a harness that narrates its own arguments can read as model-driven (A);
    across the miner's trajectories its templates give it away (``judging.axis.axis_for_miner``),
    and no trace of a miner labelled B is imitation data, whatever it looks like alone. A miner
    labelled ``mixed`` does not overrule: a steady model that always searches, views, recommends
    also repeats one call template, so that label alone proves no harness.
    """
    if judgment.axis == "A" and miner_axis == "B":
        return "B"
    return judgment.axis


def taken(axis: Axis, config: CurationConfig) -> bool:
    """Whether the imitation sets take traces of this axis as they are (``A`` takes ``A-attested`` too)."""
    return axis in config.axes or (axis == ATTESTED and "A" in config.axes)


def converts(judgment: Judgment, config: CurationConfig, miner_axis: Axis | None = None) -> bool:
    """Whether the conversion stage rewrites this trace (its axis is to be converted, not taken as it is)."""
    axis = effective_axis(judgment, miner_axis)
    return not taken(axis, config) and axis in config.convert_axes


def axis_route(trace: JudgedTrace, context: TraceContext) -> Gate:
    """On to the imitation sets; B aside into ``AXIS_B``; other labels dropped (``axis_<label>``).

    Where the run converts (``context.converting``), a label to convert passes on to the
    conversion stage.
    """
    judgment, config, miner_axis = trace.judgment, context.config, context.miner_axis
    axis = effective_axis(judgment, miner_axis)
    if taken(axis, config) or (context.converting and converts(judgment, config, miner_axis)):
        return PASS
    return aside(AXIS_B) if axis == "B" else drop(f"axis_{axis}")
