"""The axis label: did the model choose the tool calls (A), a harness (B), both (mixed), or can we not tell?

With attested inference the label is proven from the log: a call the tool server received is
attested (``nonce_status`` ``valid``) when it matched, byte for byte, a tool call of a
completion the validator's inference gateway had served the episode (``arena.inference``); a
trajectory whose every logged call is attested is ``A-attested``, one with some attested calls
``mixed``. Otherwise the label is inferred from structure, step by step (an assistant message
with tool calls, `terminate`-only steps aside):

- *driven*: the message carries reasoning, and the call's salient arguments (the query, ids,
  shop) appear in that reasoning, or the reasoning cites an earlier tool result (a product id,
  or two distinctive title words from the previous results);
- *narrated*: reasoning that neither motivates the call nor reads a result, or that says the
  same as an earlier step about other data (the same *skeleton*);
- *silent*: no reasoning at all (no evidence either way).

A needs >= 75% driven steps and no hidden calls; B is <= 25% driven with some narration, or
silent steps plus calls the trajectory hides. A *degenerate* trajectory (no answer and at most
one call, shown or logged, besides `terminate`: a miner that gives up at once) holds no
decision to attribute to anyone, so it is unknown, never B. Across a miner's trajectories,
:func:`axis_for_miner` adds two template signals, read from its non-degenerate trajectories:
narration whose skeletons recur across tasks, and one call signature on >= 80% of at least five
trajectories. ``docs/judging.md`` states the precision limits: narration that restates the
harness's own arguments reads as *driven* one trajectory at a time.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from arena.tools import tool_kind
from arena.types import Message, ToolCall, ToolLogEntry, Trajectory
from judging.answer import named_ids
from judging.context import JudgingContext
from judging.facts import result_facts
from judging.titles import title_tokens
from judging.types import ATTESTED, Axis, AxisEvidence, Check

MIN_REASONING_CHARS = 20
A_SHARE = 0.75
B_SHARE = 0.25
TEMPLATE_SHARE = 0.8
TEMPLATE_MIN_TRAJECTORIES = 5
NARRATION_SHARE = 0.8
_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'|“[^”]*”|‘[^’]*’")
_NUMBER = re.compile(r"[0-9]+(?:[.,][0-9]+)*")
_RUN = re.compile(r"[¤#](?:\s*(?:,|;|/|&|\band\b|\bor\b)?\s*[¤#])+")

StepKind = Literal["driven", "narrated", "silent"]


@dataclass(frozen=True)
class Step:
    """One tool-calling step (an assistant message with non-`terminate` calls), as the classifier reads it."""

    tools: tuple[str, ...]
    kind: StepKind
    skeleton: str  # the reasoning with what varies across tasks masked (see :func:`skeleton`)


@dataclass(frozen=True)
class MinerAxis:
    """A miner's axis label over a set of its trajectories, and the signals behind it.

    Attributes:
        label: the miner's label.
        driven_share: the mean driven-step share of the trajectories that had steps to judge.
        trajectories: how many trajectories were read.
        labels: the per-trajectory labels, counted.
        template_share: the share of trajectories with the most common call signature.
        template: that signature, when it decided the label.
        narration_template_share: the share of reasoning steps whose skeleton recurs across tasks.
        mechanical_view_share: the share of trajectories whose every view took the top results.
    """

    label: Axis
    driven_share: float | None
    trajectories: int
    labels: dict[Axis, int] = field(default_factory=dict)
    template_share: float = 0.0
    template: str | None = None
    narration_template_share: float = 0.0
    mechanical_view_share: float | None = None


def _text(message: Message) -> str:
    return "\n".join(filter(None, (message.reasoning_content, message.content))).strip()


def _query(trajectory: Trajectory) -> str:
    return next((m.content or "" for m in trajectory.messages if m.role == "user"), "")


def _argument_values(call: ToolCall) -> list[str]:
    values: list[str] = []
    for value in call.function.parsed_or_empty.values():
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


def _salient(call: ToolCall) -> tuple[set[str], set[str]]:
    """Return (query tokens, ids) a call's reasoning should mention for it to count as motivated."""
    args = call.function.parsed
    if not isinstance(args, dict):
        return set(), set()
    q = args.get("q") if isinstance(args.get("q"), str) else ""
    shop = args.get("shop_id")
    return set(title_tokens(str(q))), set(named_ids(call)) | ({str(shop)} if shop else set())


def _derived(text: str, said: frozenset[str], call: ToolCall) -> bool | None:
    """Whether the reasoning ``text`` (its word tokens ``said``) motivates ``call``; None: nothing to say."""
    q_tokens, ids = _salient(call)
    if not q_tokens and not ids:
        return None
    q_ok = bool(q_tokens) and len(q_tokens & said) / len(q_tokens) >= 0.5
    ids_ok = bool(ids) and any(pid in text for pid in ids)
    return q_ok or ids_ok


def classify_steps(trajectory: Trajectory, query_tokens: frozenset[str] | None = None) -> tuple[Step, ...]:
    """Read each tool-calling step as driven, narrated or silent (the module docstring has the rules).

    ``query_tokens`` are the user query's word tokens (read from the trajectory when None).
    """
    if query_tokens is None:
        query_tokens = title_tokens(_query(trajectory))
    steps: list[Step] = []
    earlier_ids: set[str] = set()
    titles: set[str] = set()
    last_titles: set[str] = set()
    seen: Counter[str] = Counter()
    title_words: dict[str, frozenset[str]] = {}  # the same titles recur across results: tokenised once
    for message in trajectory.messages:
        if message.role == "tool":
            facts = result_facts(message.content or "")
            earlier_ids |= facts.product_ids
            titles |= facts.titles
            for title in facts.titles:
                words = title_words.get(title)
                if words is None:
                    words = title_words[title] = title_tokens(title)
                last_titles |= words
            continue
        if message.role != "assistant" or not message.tool_calls:
            continue
        calls = [c for c in message.tool_calls if tool_kind(c.function.name) != "end"]
        if not calls:
            continue
        text = _text(message)
        values = [v for c in calls for v in _argument_values(c)]
        shape = skeleton(text, [*values, *titles])
        kind: StepKind
        if len(text) < MIN_REASONING_CHARS:
            kind = "silent"
        else:
            said = title_tokens(text)
            derived = [d for d in (_derived(text, said, c) for c in calls) if d is not None]
            distinctive = {t for t in last_titles - query_tokens if len(t) >= 4}
            cites = any(pid in text for pid in earlier_ids) or len(distinctive & said) >= 2
            motivated = bool(derived) and sum(derived) / len(derived) >= 0.5
            kind = "driven" if motivated or cites else "narrated"
            if seen[shape]:
                kind = "narrated"  # the same words about other data: a template, not a thought
            seen[shape] += 1
        steps.append(Step(tools=tuple(c.function.name for c in calls), kind=kind, skeleton=shape))
        last_titles = set()
    return tuple(steps)


def narration_skeletons(trajectory: Trajectory) -> list[str]:
    """Return the skeleton of every step that carries reasoning (see :func:`skeleton`)."""
    return [s.skeleton for s in classify_steps(trajectory) if s.kind != "silent"]


def degenerate(trajectory: Trajectory, log: Sequence[ToolLogEntry] = ()) -> bool:
    """Whether a trajectory holds no decision: no `recommend_product` and at most one other call.

    Counted both in the trajectory and in the tool log (a harness may hide its calls), leaving
    `terminate` aside: one search and then giving up is what a miner that quits at once returns,
    and nothing in it says who chose anything.
    """
    calls = trajectory.tool_calls()
    if any(tool_kind(c.function.name) == "answer" for c in calls) or any(
        tool_kind(e.tool) == "answer" for e in log
    ):
        return False
    shown = sum(1 for c in calls if tool_kind(c.function.name) != "end")
    logged = sum(1 for e in log if tool_kind(e.tool) != "end")
    return max(shown, logged) <= 1


def classify_axis(
    trajectory: Trajectory, log: Sequence[ToolLogEntry] = (), *, hidden_calls: int = 0
) -> Check:
    """Label one trajectory A, B, mixed or unknown: the ``axis`` Check, valued by the driven-step share.

    The value is None when no step could be judged (and for a :func:`degenerate` trajectory);
    the ``AxisEvidence`` carries the label and what it rests on (the nonce counts, or the step
    counts).
    """
    nonces = Counter(e.nonce_status for e in log)
    if log and nonces["valid"] == len(log):
        return _axis_check(AxisEvidence(label=ATTESTED, attested=True, nonces=dict(nonces)), 1.0)
    if nonces["valid"]:
        share = nonces["valid"] / len(log)
        return _axis_check(AxisEvidence(label="mixed", attested=True, nonces=dict(nonces)), share)
    if degenerate(trajectory, log):
        evidence = AxisEvidence(label="unknown", attested=False, steps=0, degenerate=True)
        return _axis_check(evidence, None)
    query = _query(trajectory)
    steps = classify_steps(trajectory, title_tokens(query))
    kinds = Counter(step.kind for step in steps)
    total = len(steps)
    driven = kinds["driven"] / total if total else 0.0
    label: Axis
    if total == 0:
        label = "unknown"
    elif kinds["silent"] == total:
        label = "B" if hidden_calls else "unknown"
    elif driven >= A_SHARE:
        label = "mixed" if hidden_calls else "A"
    elif driven <= B_SHARE:
        label = "B"
    else:
        label = "mixed"
    evidence = AxisEvidence(
        label=label,
        attested=False,
        steps=total,
        kinds=dict(kinds),
        hidden_calls=hidden_calls,
        verbatim_query_searches=_verbatim_searches(trajectory, query),
        invalid_nonces=nonces["invalid"] or None,
    )
    judged = total and kinds["silent"] != total
    return _axis_check(evidence, round(driven, 6) if judged else None)


def check_axis(ctx: JudgingContext) -> Check:
    """The ``axis`` check of a judging context (its hidden calls from the reconciliation with the log)."""
    return classify_axis(ctx.trajectory, ctx.log, hidden_calls=len(ctx.reconciliation.hidden))


def _axis_check(evidence: AxisEvidence, driven_share: float | None) -> Check:
    detail = "attested by the inference gateway" if evidence.attested else f"steps {evidence.kinds or 'none'}"
    if evidence.degenerate:
        detail = "degenerate: no answer and at most one call"
    return Check(
        name="axis", value=driven_share, explanation=f"axis {evidence.label}: {detail}", evidence=evidence
    )


def _verbatim_searches(trajectory: Trajectory, query: str) -> int:
    wanted = " ".join(query.lower().split())
    count = 0
    for call in trajectory.tool_calls():
        q = call.function.parsed_or_empty.get("q")
        if isinstance(q, str) and " ".join(q.lower().split()) == wanted:
            count += 1
    return count


def _prefix_union(results: Sequence[tuple[str, ...]], ids: tuple[str, ...]) -> bool:
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
    query = _query(trajectory)
    q_tokens = title_tokens(query)
    tokens: list[str] = []
    for call in trajectory.tool_calls():
        q = call.function.parsed_or_empty.get("q")
        part = ""
        if isinstance(q, str):
            same = " ".join(q.lower().split()) == " ".join(query.lower().split())
            part = "q=query" if same else "q=subset" if title_tokens(q) <= q_tokens else "q=free"
        token = f"{call.function.name}({part})"
        if not tokens or tokens[-1] != token:
            tokens.append(token)
    return " > ".join(tokens)


def mechanical_views(trajectory: Trajectory) -> bool | None:
    """Whether every view took the first k ids of the latest results, in order (None: no views)."""
    results = {m.tool_call_id: m.content or "" for m in trajectory.messages if m.role == "tool"}
    since_view: list[tuple[str, ...]] = []
    verdicts: list[bool] = []
    for call in trajectory.tool_calls():
        if tool_kind(call.function.name) == "view":
            ids = named_ids(call)
            verdicts.append(bool(ids) and _prefix_union(since_view, ids))
            since_view = []
        elif ordered := result_facts(results.get(call.id, "")).ranked_ids:
            since_view.append(ordered)
    return all(verdicts) if verdicts else None


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
) -> MinerAxis:
    """Label a miner from a set of its trajectories: per-trajectory labels plus the template signals.

    With at least five trajectories: when >= 80% of the reasoning steps are narration templates
    (:func:`narration_template_share`) the miner is B, whatever each trajectory looks like
    alone (template text proves nothing about who chose the calls); when one call signature
    (:func:`template_signature`) covers >= 80% of them, it is B, or mixed where the
    trajectories look model-driven one by one. Otherwise the majority per-trajectory label.
    Both template signals read only the trajectories that hold a decision (not
    :func:`degenerate`): a quitter's one search repeated on every task is not a harness.
    A majority of ``A-attested`` trajectories stands: a steady model repeats one call template
    too, and its calls are proven.
    """
    logs = logs if logs is not None else [() for _ in trajectories]
    checks = [classify_axis(t, log) for t, log in zip(trajectories, logs, strict=True)]
    labels = Counter(c.evidence_as(AxisEvidence).label for c in checks)
    decided = [
        t for t, c in zip(trajectories, checks, strict=True) if not c.evidence_as(AxisEvidence).degenerate
    ]
    signatures = Counter(template_signature(t) for t in decided)
    top_signature, top_count = signatures.most_common(1)[0] if signatures else ("", 0)
    share = top_count / len(decided) if decided else 0.0
    enough = len(decided) >= TEMPLATE_MIN_TRAJECTORIES
    narration = narration_template_share(decided)
    known = Counter({k: v for k, v in labels.items() if k != "unknown"})
    ranked = known.most_common()
    majority: Axis = "unknown"
    if ranked:
        majority = ranked[0][0] if len(ranked) == 1 or ranked[0][1] > ranked[1][1] else "mixed"
    label: Axis = majority
    if majority == ATTESTED:
        pass  # proven call by call: the template signals are inferences and do not overrule it
    elif enough and narration >= NARRATION_SHARE:
        label = "B"
    elif enough and share >= TEMPLATE_SHARE:
        label = "mixed" if majority == "A" else "B"
    driven = [c.value for c in checks if c.value is not None]
    views = [m for m in map(mechanical_views, trajectories) if m is not None]
    return MinerAxis(
        label=label,
        driven_share=round(sum(driven) / len(driven), 6) if driven else None,
        trajectories=len(trajectories),
        labels=dict(labels),
        template_share=round(share, 6),
        template=top_signature if enough and share >= TEMPLATE_SHARE else None,
        narration_template_share=round(narration, 6),
        mechanical_view_share=round(sum(views) / len(views), 6) if views else None,
    )
