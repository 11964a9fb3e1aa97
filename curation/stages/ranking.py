"""The ``ranking`` stage's structural score: how the agent worked, from the judgment's process counts.

Ranking drops nothing: it orders what ``dedup`` walks (``curation.workspace.RANK_ORDER``: successes
first, then native before converted, then this score, the judge's score, the episode id), and
dedup collapses each group onto its best-ranked trace.
"""

from __future__ import annotations

from judging.types import Judgment

# The weights of the structural score; they sum to 1.
STRUCTURE_WEIGHTS = {
    "verified": 0.35,
    "no_loops": 0.2,
    "no_hallucination": 0.2,
    "reformulated": 0.15,
    "depth": 0.1,
}
# Reformulating the query this many times earns the full reformulation share.
REFORMULATIONS_FOR_FULL = 2
# Assistant turns with tool calls: fewer than MIN_DEPTH is too shallow to have checked anything,
# more than EFFICIENT_DEPTH wanders; beyond it the depth share falls linearly to 0 at twice that.
MIN_DEPTH = 3
EFFICIENT_DEPTH = 12


def structural_score(judgment: Judgment) -> float:
    """Score how the agent worked, in [0, 1], from the judgment's process counts.

    Weighted (``STRUCTURE_WEIGHTS``): verified its answer by viewing it; no loops; no
    hallucinated product ids; reformulated its search; a depth between ``MIN_DEPTH`` and
    ``EFFICIENT_DEPTH`` tool-calling turns.
    """
    process = judgment.process
    parts = {
        "verified": float(process.verified),
        "no_loops": float(process.loops == 0),
        "no_hallucination": float(not judgment.hallucinated_product_ids),
        "reformulated": min(process.reformulations, REFORMULATIONS_FOR_FULL) / REFORMULATIONS_FOR_FULL,
        "depth": _depth_share(process.depth),
    }
    return round(sum(STRUCTURE_WEIGHTS[k] * v for k, v in parts.items()), 6)


def _depth_share(depth: int) -> float:
    if depth < MIN_DEPTH:
        return depth / MIN_DEPTH
    if depth <= EFFICIENT_DEPTH:
        return 1.0
    return max(0.0, 2.0 - depth / EFFICIENT_DEPTH)
