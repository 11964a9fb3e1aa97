"""The curation funnel's stages, in the order they run: ``STAGES``, one module each under this package.

A stage's name is its key in ``funnel.json``, in the funnel's counts and in the
``arena_curation_rows`` metric. The per-trace stages (those with a ``gate``) run in this order
on every trace still in the main stream; adding one is a module with its gate and an entry here
(docs/recipes/add-a-curation-stage.md).
"""

from __future__ import annotations

from curation.stages.axis import axis_route
from curation.stages.hard_rejects import hard_reject
from curation.stages.reasoning_gate import reasoning_gate
from curation.stages.stage import Stage, TraceGate

STAGES: tuple[Stage, ...] = (
    Stage("normalise", "canonical chat schema (messages + tools); prompt is the task's query"),
    Stage(
        "hard_rejects",
        "any judge reject, fabricated tool results, an episode that did not complete",
        hard_reject,
    ),
    Stage(
        "reasoning_gate",
        "the reasoning judge's value against --min-reasoning; unscored per policy",
        reasoning_gate,
    ),
    Stage(
        "axis",
        "axis labels kept for imitation sets or to convert; B not converted set aside",
        axis_route,
    ),
    Stage("ranking", "structural score: verified, reformulations, depth, no loops, no hallucinated ids"),
    Stage(
        "convert",
        "converted labels (default B, mixed) rewritten as agentic trajectories, re-judged, "
        "where dedup reaches them with their caps open",
    ),
    Stage("dedup", "exact and near duplicate strategies per leak cluster; caps per (task, miner) and task"),
    Stage("split", "train / eval by leak cluster, audited for leaks across the split"),
)
STAGE_NAMES = tuple(stage.name for stage in STAGES)
# The per-trace stages' names and gates, in order (run by ``curation.curate`` after ``normalise``).
TRACE_GATES: tuple[tuple[str, TraceGate], ...] = tuple(
    (stage.name, stage.gate) for stage in STAGES if stage.gate is not None
)
