"""The axis label: did the model choose the tool calls (A), a harness (B), both (mixed), or can we not tell?

With attested inference (every logged call carries a validator-minted nonce) the label is
proven from the log. Otherwise it is inferred from structure, step by step (an assistant
message with tool calls, `terminate`-only steps aside):

- *driven*: the message carries reasoning, and the call's salient arguments (the query, ids,
  shop) appear in that reasoning, or the reasoning cites an earlier tool result (a product id,
  or two distinctive title words from the previous results);
- *narrated*: reasoning that neither motivates the call nor reads a result, or the same
  reasoning text (numbers masked) repeated across steps;
- *silent*: no reasoning at all (no evidence either way).

A needs >= 75% driven steps and no hidden calls; B is <= 25% driven with some narration, or
silent steps plus calls the trajectory hides. Across a miner's trajectories,
:func:`axis_for_miner` adds the template signal: the same call signature (tools and argument
provenance) on >= 80% of at least five trajectories is a harness. ``docs/judging.md`` states
the precision limits: narration that restates the harness's arguments reads as *driven*.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from arena.types import Message, ToolLogEntry, Trajectory
from judging.answer import TERMINATE, parse_arguments, split_ids
from judging.claims import result_product_ids
from judging.titles import title_tokens
from judging.types import Axis, Check

MIN_REASONING_CHARS = 20
A_SHARE = 0.75
B_SHARE = 0.25
TEMPLATE_SHARE = 0.8
TEMPLATE_MIN_TRAJECTORIES = 5
_MASK = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class AxisVerdict:
    """An axis label, the share of model-driven steps (None when there were none to judge), and why."""

    label: Axis
    driven_share: float | None
    evidence: dict[str, Any] = field(default_factory=dict)


def _text(message: Message) -> str:
    return "\n".join(filter(None, (message.reasoning_content, message.content))).strip()


@lru_cache(maxsize=4096)
def _result_titles(content: str) -> frozenset[str]:
    try:
        value = json.loads(content)
    except (ValueError, TypeError):
        return frozenset()
    tokens: set[str] = set()
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("title"), str):
                tokens |= title_tokens(node["title"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return frozenset(tokens)


def _salient(arguments: str) -> tuple[set[str], set[str]]:
    """Return (query tokens, ids) a call's reasoning should mention for it to count as motivated."""
    args, _ = parse_arguments(arguments)
    if args is None:
        return set(), set()
    q = args.get("q") if isinstance(args.get("q"), str) else ""
    ids, _ = split_ids(args.get("product_ids", ""))
    shop = args.get("shop_id")
    return set(title_tokens(str(q))), set(ids) | ({str(shop)} if shop else set())


def _derived(text: str, arguments: str) -> bool | None:
    q_tokens, ids = _salient(arguments)
    if not q_tokens and not ids:
        return None
    said = title_tokens(text)
    q_ok = bool(q_tokens) and len(q_tokens & said) / len(q_tokens) >= 0.5
    ids_ok = bool(ids) and any(pid in text for pid in ids)
    return q_ok or ids_ok


def _steps(trajectory: Trajectory, query_tokens: frozenset[str]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    earlier_ids: set[str] = set()
    last_titles: set[str] = set()
    seen_texts: Counter[str] = Counter()
    for message in trajectory.messages:
        if message.role == "tool":
            content = message.content or ""
            earlier_ids |= result_product_ids(content)
            last_titles |= _result_titles(content)
            continue
        if message.role != "assistant" or not message.tool_calls:
            continue
        calls = [c for c in message.tool_calls if c.function.name != TERMINATE]
        if not calls:
            continue
        text = _text(message)
        masked = " ".join(_MASK.sub("#", text.lower()).split())
        if len(text) < MIN_REASONING_CHARS:
            kind = "silent"
        else:
            derived = [d for d in (_derived(text, c.function.arguments) for c in calls) if d is not None]
            distinctive = {t for t in last_titles - query_tokens if len(t) >= 4}
            cites = any(pid in text for pid in earlier_ids) or len(distinctive & title_tokens(text)) >= 2
            motivated = bool(derived) and sum(derived) / len(derived) >= 0.5
            kind = "driven" if motivated or cites else "narrated"
            if seen_texts[masked]:
                kind = "narrated"  # the same words again: a template, not a thought about this step
        seen_texts[masked] += 1
        steps.append({"tools": [c.function.name for c in calls], "kind": kind})
        last_titles = set()
    return steps


def classify_axis(
    trajectory: Trajectory, log: Sequence[ToolLogEntry] = (), *, hidden_calls: int = 0
) -> AxisVerdict:
    """Label one trajectory A, B, mixed or unknown, with the evidence for the label."""
    nonces = Counter(e.nonce_status for e in log)
    if log and nonces["valid"] == len(log):
        return AxisVerdict("A", 1.0, {"attested": True, "nonces": dict(nonces)})
    if nonces["valid"]:
        return AxisVerdict("mixed", nonces["valid"] / len(log), {"attested": True, "nonces": dict(nonces)})
    query = next((m.content or "" for m in trajectory.messages if m.role == "user"), "")
    steps = _steps(trajectory, title_tokens(query))
    kinds = Counter(s["kind"] for s in steps)
    total = len(steps)
    evidence: dict[str, Any] = {
        "attested": False,
        "steps": total,
        "kinds": dict(kinds),
        "hidden_calls": hidden_calls,
        "verbatim_query_searches": _verbatim_searches(trajectory, query),
    }
    if nonces["invalid"]:
        evidence["invalid_nonces"] = nonces["invalid"]
    if total == 0:
        return AxisVerdict("unknown", None, evidence)
    driven = kinds["driven"] / total
    if kinds["silent"] == total:
        label: Axis = "B" if hidden_calls else "unknown"
        return AxisVerdict(label, None, evidence)
    if driven >= A_SHARE:
        label = "mixed" if hidden_calls else "A"
    elif driven <= B_SHARE:
        label = "B"
    else:
        label = "mixed"
    return AxisVerdict(label, round(driven, 6), evidence)


def _verbatim_searches(trajectory: Trajectory, query: str) -> int:
    wanted = " ".join(query.lower().split())
    count = 0
    for call in trajectory.tool_calls():
        args, _ = parse_arguments(call.function.arguments)
        if args and isinstance(args.get("q"), str) and " ".join(args["q"].lower().split()) == wanted:
            count += 1
    return count


def template_signature(trajectory: Trajectory) -> str:
    """Return the trajectory's call template: tools in order with where their arguments came from.

    Each call becomes ``tool(provenance)``: ``q=query`` (the user's words verbatim), ``q=subset``
    (only the user's words), ``q=free``; ``ids=top`` (a prefix of the latest result's ids, in
    order) or ``ids=other``. Runs of the same token collapse, so a fixed harness maps every
    task to one string while an agent that adapts to what it sees does not.
    """
    query = next((m.content or "" for m in trajectory.messages if m.role == "user"), "")
    q_tokens = title_tokens(query)
    latest: list[str] = []
    tokens: list[str] = []
    results = {m.tool_call_id: m.content or "" for m in trajectory.messages if m.role == "tool"}
    for call in trajectory.tool_calls():
        args, _ = parse_arguments(call.function.arguments)
        parts: list[str] = []
        if args:
            if isinstance(args.get("q"), str):
                q = args["q"]
                same = " ".join(q.lower().split()) == " ".join(query.lower().split())
                parts.append("q=query" if same else "q=subset" if title_tokens(q) <= q_tokens else "q=free")
            ids, _ = split_ids(args.get("product_ids", ""))
            if ids:
                top = tuple(latest[: len(ids)]) == ids
                parts.append("ids=top" if top else "ids=other")
        token = f"{call.function.name}({','.join(parts)})"
        if not tokens or tokens[-1] != token:
            tokens.append(token)
        ordered = _ordered_ids(results.get(call.id, ""))
        if ordered:
            latest = ordered
    return " > ".join(tokens)


def _ordered_ids(content: str) -> list[str]:
    try:
        value = json.loads(content)
    except (ValueError, TypeError):
        return []
    if not isinstance(value, list):
        return []
    return [str(v["product_id"]) for v in value if isinstance(v, dict) and "product_id" in v]


def axis_for_miner(
    trajectories: Sequence[Trajectory], logs: Sequence[Sequence[ToolLogEntry]] | None = None
) -> AxisVerdict:
    """Label a miner from a set of its trajectories: per-trajectory labels plus the template signal.

    The same template signature on >= 80% of at least five trajectories marks a harness: the
    miner is B, or mixed where the trajectories themselves look model-driven.
    """
    logs = logs if logs is not None else [() for _ in trajectories]
    verdicts = [classify_axis(t, log) for t, log in zip(trajectories, logs, strict=True)]
    labels = Counter(v.label for v in verdicts)
    signatures = Counter(template_signature(t) for t in trajectories)
    top_signature, top_count = signatures.most_common(1)[0] if signatures else ("", 0)
    share = top_count / len(trajectories) if trajectories else 0.0
    template = len(trajectories) >= TEMPLATE_MIN_TRAJECTORIES and share >= TEMPLATE_SHARE
    known = Counter({k: v for k, v in labels.items() if k != "unknown"})
    ranked = known.most_common()
    majority: Axis = "unknown"
    if ranked:
        majority = ranked[0][0] if len(ranked) == 1 or ranked[0][1] > ranked[1][1] else "mixed"
    label: Axis = ("mixed" if majority == "A" else "B") if template else majority
    driven = [v.driven_share for v in verdicts if v.driven_share is not None]
    return AxisVerdict(
        label,
        round(sum(driven) / len(driven), 6) if driven else None,
        {
            "trajectories": len(trajectories),
            "labels": dict(labels),
            "template_share": round(share, 6),
            "template": top_signature if template else None,
        },
    )


def axis_check(verdict: AxisVerdict) -> Check:
    """Wrap a verdict as the ``axis`` Check: the driven-step share (None when nothing could be judged)."""
    kinds = verdict.evidence.get("kinds", {})
    detail = "attested by nonces" if verdict.evidence.get("attested") else f"steps {kinds or 'none'}"
    return Check(
        name="axis",
        value=verdict.driven_share,
        explanation=f"axis {verdict.label}: {detail}",
        evidence={"label": verdict.label, **verdict.evidence},
    )
