"""The axis label: did the model choose the tool calls (A), a harness (B), both (mixed), or can we not tell?

With attested inference (every logged call carries a validator-minted nonce) the label is
proven from the log. Otherwise it is inferred from structure, step by step (an assistant
message with tool calls, `terminate`-only steps aside):

- *driven*: the message carries reasoning, and the call's salient arguments (the query, ids,
  shop) appear in that reasoning, or the reasoning cites an earlier tool result (a product id,
  or two distinctive title words from the previous results);
- *narrated*: reasoning that neither motivates the call nor reads a result, or that says the
  same as an earlier step about other data (the same *skeleton*);
- *silent*: no reasoning at all (no evidence either way).

A needs >= 75% driven steps and no hidden calls; B is <= 25% driven with some narration, or
silent steps plus calls the trajectory hides. Across a miner's trajectories,
:func:`axis_for_miner` adds two template signals: narration whose skeletons recur across
tasks, and one call signature on >= 80% of at least five trajectories. ``docs/judging.md``
states the precision limits: narration that restates the harness's own arguments reads as
*driven* one trajectory at a time.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
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
NARRATION_SHARE = 0.8
_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'|“[^”]*”|‘[^’]*’")
_NUMBER = re.compile(r"[0-9]+(?:[.,][0-9]+)*")
_RUN = re.compile(r"[¤#](?:\s*(?:,|;|/|&|\band\b|\bor\b)?\s*[¤#])+")


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
    """Return the ``title`` strings inside a JSON tool result."""
    try:
        value = json.loads(content)
    except (ValueError, TypeError):
        return frozenset()
    titles: set[str] = set()
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("title"), str):
                titles.add(node["title"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return frozenset(titles)


def _argument_values(arguments: str) -> list[str]:
    args, _ = parse_arguments(arguments)
    values: list[str] = []
    for value in (args or {}).values():
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            values.append(str(value))
            values += [piece.strip() for piece in str(value).split(",")]
    return values


def skeleton(text: str, values: Iterable[str]) -> str:
    """Return ``text`` with what varies from task to task masked: argument values, titles, quotes, numbers.

    Two steps with one skeleton say the same thing about different data: the mark of a
    narration template.
    """
    out = text.lower()
    for value in sorted({v.lower() for v in values if len(v.strip()) >= 2}, key=len, reverse=True):
        out = out.replace(value, " ¤ ")
    out = _NUMBER.sub("#", _QUOTED.sub(" ¤ ", out))
    out = _RUN.sub("¤", " ".join(out.split()))  # "a, b and c" is one list, whatever its length
    return out


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
    titles: set[str] = set()
    last_titles: set[str] = set()
    seen: Counter[str] = Counter()
    for message in trajectory.messages:
        if message.role == "tool":
            found = _result_titles(message.content or "")
            earlier_ids |= result_product_ids(message.content or "")
            titles |= found
            last_titles |= {t for title in found for t in title_tokens(title)}
            continue
        if message.role != "assistant" or not message.tool_calls:
            continue
        calls = [c for c in message.tool_calls if c.function.name != TERMINATE]
        if not calls:
            continue
        text = _text(message)
        values = [v for c in calls for v in _argument_values(c.function.arguments)]
        shape = skeleton(text, [*values, *titles])
        if len(text) < MIN_REASONING_CHARS:
            kind = "silent"
        else:
            derived = [d for d in (_derived(text, c.function.arguments) for c in calls) if d is not None]
            distinctive = {t for t in last_titles - query_tokens if len(t) >= 4}
            cites = any(pid in text for pid in earlier_ids) or len(distinctive & title_tokens(text)) >= 2
            motivated = bool(derived) and sum(derived) / len(derived) >= 0.5
            kind = "driven" if motivated or cites else "narrated"
            if seen[shape]:
                kind = "narrated"  # the same words about other data: a template, not a thought
            seen[shape] += 1
        steps.append({"tools": [c.function.name for c in calls], "kind": kind, "skeleton": shape})
        last_titles = set()
    return steps


def narration_skeletons(trajectory: Trajectory) -> list[str]:
    """Return the skeleton of every step that carries reasoning (see :func:`skeleton`)."""
    query = next((m.content or "" for m in trajectory.messages if m.role == "user"), "")
    return [s["skeleton"] for s in _steps(trajectory, title_tokens(query)) if s["kind"] != "silent"]


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
    kinds = Counter(step["kind"] for step in steps)
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


def _prefix_union(results: Sequence[list[str]], ids: tuple[str, ...]) -> bool:
    """Whether ``ids`` are the first k ids of each of the latest results, in order (a mechanical pick).

    Any one k, over the last r results for any r: a harness that searched each item, maybe
    searched again within a shop, then views the top k of its final lists.
    """
    for start in range(len(results)):
        for k in range(1, 11):
            union = tuple(dict.fromkeys(pid for ordered in results[start:] for pid in ordered[:k]))
            if union == ids:
                return True
    return False


def template_signature(trajectory: Trajectory) -> str:
    """Return the trajectory's call template: the tools in order, with where each query came from.

    Each call becomes ``tool(provenance)``: a query is ``q=query`` (the user's words verbatim),
    ``q=subset`` (only the user's words) or ``q=free``. Runs of the same token collapse, so a
    fixed harness maps every task to one string (however many items it searches) while an
    agent that adapts to what it sees (reformulates, pages, views between searches) does not.
    """
    query = next((m.content or "" for m in trajectory.messages if m.role == "user"), "")
    q_tokens = title_tokens(query)
    tokens: list[str] = []
    for call in trajectory.tool_calls():
        args, _ = parse_arguments(call.function.arguments)
        part = ""
        if args and isinstance(args.get("q"), str):
            q = args["q"]
            same = " ".join(q.lower().split()) == " ".join(query.lower().split())
            part = "q=query" if same else "q=subset" if title_tokens(q) <= q_tokens else "q=free"
        token = f"{call.function.name}({part})"
        if not tokens or tokens[-1] != token:
            tokens.append(token)
    return " > ".join(tokens)


def mechanical_views(trajectory: Trajectory) -> bool | None:
    """Whether every view took the first k ids of the latest results, in order (None: no views)."""
    results = {m.tool_call_id: m.content or "" for m in trajectory.messages if m.role == "tool"}
    since_view: list[list[str]] = []
    verdicts: list[bool] = []
    for call in trajectory.tool_calls():
        if call.function.name == "view_product_information":
            args, _ = parse_arguments(call.function.arguments)
            ids, _ = split_ids((args or {}).get("product_ids", ""))
            verdicts.append(bool(ids) and _prefix_union(since_view, ids))
            since_view = []
        elif ordered := _ordered_ids(results.get(call.id, "")):
            since_view.append(ordered)
    return all(verdicts) if verdicts else None


def _ordered_ids(content: str) -> list[str]:
    try:
        value = json.loads(content)
    except (ValueError, TypeError):
        return []
    if not isinstance(value, list):
        return []
    return [str(v["product_id"]) for v in value if isinstance(v, dict) and "product_id" in v]


def narration_template_share(trajectories: Sequence[Trajectory]) -> float:
    """Return the share of reasoning steps whose skeleton recurs across a miner's trajectories.

    A skeleton recurs when it appears in at least three trajectories and at least a tenth of
    them. A harness narrating its calls from templates scores near 1; a model thinking about
    each task's data scores low, even when its phrasing is formulaic in places.
    """
    per_trajectory = [narration_skeletons(t) for t in trajectories]
    spread = Counter(s for skeletons in per_trajectory for s in set(skeletons))
    need = max(3, math.ceil(0.1 * len(trajectories)))
    steps = [s for skeletons in per_trajectory for s in skeletons]
    return sum(1 for s in steps if spread[s] >= need) / len(steps) if steps else 0.0


def axis_for_miner(
    trajectories: Sequence[Trajectory], logs: Sequence[Sequence[ToolLogEntry]] | None = None
) -> AxisVerdict:
    """Label a miner from a set of its trajectories: per-trajectory labels plus the template signals.

    With at least five trajectories: when >= 80% of the reasoning steps are narration templates
    (:func:`narration_template_share`) the miner is B, whatever each trajectory looks like
    alone (template text proves nothing about who chose the calls); when one call signature
    (:func:`template_signature`) covers >= 80% of them, it is B, or mixed where the
    trajectories look model-driven one by one. Otherwise the majority per-trajectory label.
    """
    logs = logs if logs is not None else [() for _ in trajectories]
    verdicts = [classify_axis(t, log) for t, log in zip(trajectories, logs, strict=True)]
    labels = Counter(v.label for v in verdicts)
    signatures = Counter(template_signature(t) for t in trajectories)
    top_signature, top_count = signatures.most_common(1)[0] if signatures else ("", 0)
    share = top_count / len(trajectories) if trajectories else 0.0
    enough = len(trajectories) >= TEMPLATE_MIN_TRAJECTORIES
    narration = narration_template_share(trajectories)
    known = Counter({k: v for k, v in labels.items() if k != "unknown"})
    ranked = known.most_common()
    majority: Axis = "unknown"
    if ranked:
        majority = ranked[0][0] if len(ranked) == 1 or ranked[0][1] > ranked[1][1] else "mixed"
    label: Axis = majority
    if enough and narration >= NARRATION_SHARE:
        label = "B"
    elif enough and share >= TEMPLATE_SHARE:
        label = "mixed" if majority == "A" else "B"
    driven = [v.driven_share for v in verdicts if v.driven_share is not None]
    views = [m for m in map(mechanical_views, trajectories) if m is not None]
    return AxisVerdict(
        label,
        round(sum(driven) / len(driven), 6) if driven else None,
        {
            "mechanical_view_share": round(sum(views) / len(views), 6) if views else None,
            "trajectories": len(trajectories),
            "labels": dict(labels),
            "template_share": round(share, 6),
            "template": top_signature if enough and share >= TEMPLATE_SHARE else None,
            "narration_template_share": round(narration, 6),
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
