"""The process check: how the agent worked (searches, reformulations, verification, loops, depth).

The score is for curation and analysis; it does not enter the trajectory's final score. It is

    0.3 * searched + 0.4 * verified_share + 0.2 * no_loops + 0.1 * efficiency

where ``searched`` is 1 when the agent searched at least once, ``verified_share`` the share
of recommended ids it viewed (a view tool: `view_product_information`) before recommending, ``no_loops``
1 when no identical call was made three or more times, and ``efficiency`` 1 up to
``EFFICIENT_DEPTH`` tool-calling steps, falling linearly to 0 at twice that. Calls are counted
by their tool's kind (``arena.tools.tool_kind``): searches, views, and questions (ask).
"""

from __future__ import annotations

from collections import Counter

from arena.tools import tool_kind
from arena.types import ToolCall, canonical_json
from judging.answer import named_ids
from judging.context import JudgingContext
from judging.titles import title_tokens
from judging.types import Check, ProcessEvidence, ProcessStats

LOOP_REPEATS = 3
EFFICIENT_DEPTH = 12
WEIGHTS = {"searched": 0.3, "verified": 0.4, "no_loops": 0.2, "efficiency": 0.1}


def query_key(call: ToolCall) -> str | None:
    """What makes two searches the same search: the query's title tokens, or the whole arguments."""
    args = call.function.parsed
    if not isinstance(args, dict):
        return None
    q = args.get("q")
    if not isinstance(q, str):
        # find_products_in_same_shop and friends: the whole argument object is the query.
        return canonical_json(args)
    return " ".join(sorted(title_tokens(q)))


def call_key(call: ToolCall) -> str:
    """What makes two calls of one tool the same call: their arguments as parsed (a loop repeats it)."""
    args = call.function.parsed
    return canonical_json(args) if isinstance(args, dict) else call.function.arguments.strip()


def process_stats(ctx: JudgingContext) -> tuple[ProcessStats, float]:
    """Count how the agent worked; also return the share of answer ids viewed before the answer."""
    calls, answer = ctx.calls, ctx.answer
    kinds = [tool_kind(c.function.name) for c in calls]
    searches = [c for c, kind in zip(calls, kinds, strict=True) if kind == "search"]
    keys = [query_key(c) for c in searches]
    reformulations = sum(1 for a, b in zip(keys, keys[1:], strict=False) if a != b)
    viewed: set[str] = set()
    for call, kind in zip(calls, kinds, strict=True):
        if answer.call is not None and call.id == answer.call.id:
            break
        if kind == "view":
            viewed.update(named_ids(call) or named_ids(call, "product_id"))
    ids = answer.product_ids
    verified_share = sum(1 for pid in ids if pid in viewed) / len(ids) if ids else 0.0
    repeats = Counter((c.function.name, call_key(c)) for c in calls)
    loops = sum(1 for n in repeats.values() if n >= LOOP_REPEATS)
    depth = sum(1 for m in ctx.trajectory.messages if m.role == "assistant" and m.tool_calls)
    stats = ProcessStats(
        tool_calls=len(calls),
        searches=len(searches),
        reformulations=reformulations,
        views=kinds.count("view"),
        verified=bool(ids) and verified_share == 1.0,
        loops=loops,
        depth=depth,
        tokens=ctx.tokens,
        # The shopper's questions as the tool server logged them (``judging.shopper``).
        questions=sum(1 for entry in ctx.log if tool_kind(entry.tool) == "ask"),
        questions_needed=len(ctx.profile.held_back) if ctx.profile is not None else 0,
    )
    return stats, verified_share


def check_process(ctx: JudgingContext) -> Check:
    """Score the process: the ``process`` Check, with the weighted parts and the raw counts as evidence."""
    stats, verified_share = process_stats(ctx)
    parts = {
        "searched": 1.0 if stats.searches else 0.0,
        "verified": verified_share,
        "no_loops": 0.0 if stats.loops else 1.0,
        "efficiency": max(0.0, min(1.0, 2 - stats.depth / EFFICIENT_DEPTH)),
    }
    value = sum(WEIGHTS[k] * v for k, v in parts.items())
    explanation = (
        f"{stats.searches} searches ({stats.reformulations} reformulations), {stats.views} views, "
        f"{'verified' if stats.verified else 'not verified'} before recommending, "
        f"{stats.loops} loops, depth {stats.depth}"
    )
    return Check(
        name="process",
        value=round(value, 6),
        explanation=explanation,
        evidence=ProcessEvidence(parts=parts, stats=stats),
    )
