"""The format check: the hard rejects (any one zeroes the score) and per-step well-formedness.

Hard rejects, by name:

- ``unanswered_tool_call``: a tool call with no tool message answering it before the next
  assistant message (or by the end), a tool message answering no earlier call, a call
  answered twice, or two calls sharing an id.
- ``recommend_not_once``: `recommend_product` called zero times or more than once.
- ``unknown_product_id``: the answer's arguments do not parse, or name an id not in the catalog.
- ``too_long``: the trajectory's estimated tokens exceed the budget.
- ``no_final_action``: the last tool call is neither `recommend_product` nor `terminate`.
- ``too_many_turns``: the trajectory holds more messages than ``max_turns`` (200, tau2-bench's
  step cap): an honest agent within the tool-call budget never comes near it.
"""

from __future__ import annotations

from arena.arguments import ArgumentError
from arena.tools import tool_kind, tool_names
from arena.types import Trajectory
from judging.answer import answer_tools
from judging.context import JudgingContext, estimate_tokens
from judging.types import BadStep, Check, FormatEvidence, Reject

__all__ = ["check_format", "estimate_tokens", "pairing_problems"]


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


def check_format(ctx: JudgingContext) -> Check:
    """Find the hard rejects and score per-step well-formedness.

    Returns:
        The ``format`` Check: 0 when rejected, else the share of tool calls whose arguments are
        a JSON object and whose tool is in the episode's tool set; its ``FormatEvidence`` gives
        each reject's reason (``rejects`` in the fixed order of ``judging.types.REJECTS``), the
        malformed steps and the token estimate.
    """
    answer, calls, tokens = ctx.answer, ctx.calls, ctx.tokens
    reasons: dict[Reject, str] = {}
    pairing = pairing_problems(ctx.trajectory)
    if pairing:
        reasons["unanswered_tool_call"] = "; ".join(pairing[:5])
    if answer.recommend_calls != 1:
        reasons["recommend_not_once"] = f"{answer_tools()} called {answer.recommend_calls} times"
    if answer.call is not None:
        unknown = [pid for pid in answer.product_ids if pid not in ctx.found]
        if answer.error:
            reasons["unknown_product_id"] = f"answer unreadable: {answer.error}"
        elif unknown:
            reasons["unknown_product_id"] = f"not in the catalog: {', '.join(unknown)}"
    budget = ctx.config.token_budget
    if tokens > budget:
        reasons["too_long"] = f"about {tokens} tokens, over the budget of {budget}"
    turns = len(ctx.trajectory.messages)
    if turns > ctx.config.max_turns:
        reasons["too_many_turns"] = f"{turns} messages, over the cap of {ctx.config.max_turns}"
    if not calls or tool_kind(calls[-1].function.name) not in ("answer", "end"):
        last = calls[-1].function.name if calls else "nothing"
        reasons["no_final_action"] = f"ends with {last}, not {' or '.join(tool_names('answer', 'end'))}"

    known = ctx.config.known_tools
    bad_steps: list[BadStep] = []
    for call in calls:
        if isinstance(call.function.parsed, ArgumentError):
            bad_steps.append(BadStep(call_id=call.id, problem=str(call.function.parsed)))
        if call.function.name not in known:
            bad_steps.append(BadStep(call_id=call.id, problem=f"unknown tool {call.function.name!r}"))
    bad_ids = {step.call_id for step in bad_steps}
    well_formed = (len(calls) - len(bad_ids)) / len(calls) if calls else 0.0

    evidence = FormatEvidence(reasons=reasons, bad_steps=tuple(bad_steps), tokens=tokens)
    rejects = evidence.rejects
    explanation = (
        "rejected: " + "; ".join(f"{r} ({reasons[r]})" for r in rejects)
        if rejects
        else f"{len(calls) - len(bad_ids)}/{len(calls)} tool calls well-formed"
    )
    return Check(
        name="format", value=0.0 if rejects else well_formed, explanation=explanation, evidence=evidence
    )
