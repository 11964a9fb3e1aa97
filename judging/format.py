"""The format check: the hard rejects (any one zeroes the score) and per-step well-formedness.

Hard rejects, by name:

- ``unanswered_tool_call``: a tool call with no tool message answering it before the next
  assistant message (or by the end), a tool message answering no earlier call, a call
  answered twice, or two calls sharing an id.
- ``recommend_not_once``: `recommend_product` called zero times or more than once.
- ``unknown_product_id``: the answer's arguments do not parse, or name an id not in the catalog.
- ``too_long``: the trajectory's estimated tokens exceed the budget.
- ``no_final_action``: the last tool call is neither `recommend_product` nor `terminate`.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from arena.types import Product, Trajectory
from judging.answer import RECOMMEND, TERMINATE, Answer, parse_arguments
from judging.types import REJECTS, Check, Reject

# Characters per token for the deterministic size estimate (a common rule of thumb for
# English BPE tokenizers). The estimate only has to be stable, not exact.
CHARS_PER_TOKEN = 4


def estimate_tokens(trajectory: Trajectory) -> int:
    """Estimate a trajectory's tokens: every text field's characters divided by four, rounded up."""
    chars = 0
    for m in trajectory.messages:
        chars += len(m.content or "") + len(m.reasoning_content or "")
        for call in m.tool_calls or ():
            chars += len(call.function.name) + len(call.function.arguments)
    return math.ceil(chars / CHARS_PER_TOKEN)


def pairing_problems(trajectory: Trajectory) -> list[str]:
    """Return every way tool calls and tool messages fail to pair up one-to-one and in order."""
    problems: list[str] = []
    issued: set[str] = set()
    open_calls: list[str] = []
    answered: set[str] = set()
    for index, m in enumerate(trajectory.messages):
        if m.role == "assistant":
            problems += [f"call {cid} has no tool message" for cid in open_calls]
            open_calls = []
            for call in m.tool_calls or ():
                if call.id in issued:
                    problems.append(f"call id {call.id} used twice")
                issued.add(call.id)
                open_calls.append(call.id)
        elif m.role == "tool":
            cid = m.tool_call_id or ""
            if cid in answered:
                problems.append(f"call {cid} answered twice (message {index})")
            elif cid not in open_calls:
                problems.append(f"tool message {index} answers no pending call ({cid})")
            else:
                open_calls.remove(cid)
                answered.add(cid)
    problems += [f"call {cid} has no tool message" for cid in open_calls]
    return problems


@dataclass(frozen=True)
class FormatResult:
    """The hard rejects found, the per-step check and the token estimate."""

    rejects: tuple[Reject, ...]
    check: Check
    tokens: int


def check_format(
    trajectory: Trajectory,
    answer: Answer,
    found: Mapping[str, Product],
    *,
    known_tools: Collection[str],
    token_budget: int,
) -> FormatResult:
    """Find the hard rejects and score per-step well-formedness.

    Args:
        trajectory: The trajectory judged.
        answer: Its final answer (from :func:`judging.answer.final_answer`).
        found: Catalog products for the answer's ids (unknown ids absent).
        known_tools: Tool names of the episode's toolset.
        token_budget: The most estimated tokens a trajectory may have.

    Returns:
        Rejects in the fixed order of ``judging.types.REJECTS``, the ``format`` Check (0 when
        rejected, else the share of tool calls whose arguments parse and whose tool exists).
    """
    reasons: dict[Reject, str] = {}
    pairing = pairing_problems(trajectory)
    if pairing:
        reasons["unanswered_tool_call"] = "; ".join(pairing[:5])
    if answer.recommend_calls != 1:
        reasons["recommend_not_once"] = f"recommend_product called {answer.recommend_calls} times"
    if answer.call is not None:
        unknown = [pid for pid in answer.product_ids if pid not in found]
        if answer.error:
            reasons["unknown_product_id"] = f"answer unreadable: {answer.error}"
        elif unknown:
            reasons["unknown_product_id"] = f"not in the catalog: {', '.join(unknown)}"
    tokens = estimate_tokens(trajectory)
    if tokens > token_budget:
        reasons["too_long"] = f"about {tokens} tokens, over the budget of {token_budget}"
    calls = trajectory.tool_calls()
    if not calls or calls[-1].function.name not in (RECOMMEND, TERMINATE):
        last = calls[-1].function.name if calls else "nothing"
        reasons["no_final_action"] = f"ends with {last}, not recommend_product or terminate"

    bad_steps: list[dict[str, str]] = []
    for call in calls:
        _, error = parse_arguments(call.function.arguments)
        if error:
            bad_steps.append({"call_id": call.id, "problem": error})
        if call.function.name not in known_tools:
            bad_steps.append({"call_id": call.id, "problem": f"unknown tool {call.function.name!r}"})
    bad_ids = {step["call_id"] for step in bad_steps}
    well_formed = (len(calls) - len(bad_ids)) / len(calls) if calls else 0.0

    rejects = tuple(r for r in REJECTS if r in reasons)
    value = 0.0 if rejects else well_formed
    explanation = (
        "rejected: " + "; ".join(f"{r} ({reasons[r]})" for r in rejects)
        if rejects
        else f"{len(calls) - len(bad_ids)}/{len(calls)} tool calls well-formed"
    )
    check = Check(
        name="format",
        value=value,
        explanation=explanation,
        evidence={"reasons": dict(reasons), "bad_steps": bad_steps, "tokens": tokens},
    )
    return FormatResult(rejects=rejects, check=check, tokens=tokens)
