"""Turn rewards: the judge's own checks on the episode so far, and the one formula that makes them rewards.

After every step the environment builds a ``judging.context.JudgingContext`` on the episode so
far (the transcript and the tool log up to that call, judged against the world at the version
the last call saw) and reads :class:`Progress` from the judge's code: the grounding check's
claims, the reconciliation's results, the process check's search and call keys, the shopper
check's evidence and the injection scan. A turn's reward is what changed, in one formula::

    advance_t = claim    * (claims first stated correctly this turn)       # an advance on the score
              + revealed * (held-back needs a question revealed this turn)
    penalty_t = misquote * (claims stated wrongly this turn)
              + unseen   * (product ids this turn's call named that no earlier result showed)
              + repeat   * (searches repeating an earlier search that found nothing)
              + loop     * (calls made for the LOOP_REPEATS-th time or more, identically)
              + question * (ask_user questions beyond those needed, or refused)
              + injection * (new places where the agent's text addresses the judge)
    r_t       = advance_t - penalty_t                       for every turn before the last
    r_T       = advance_T - penalty_T + score - sum(advance_t for every turn t)   on the last

so the return of an episode is ``score - sum(penalty_t)``: the validator's score of the finished
episode, less the penalties. The advances are potential-based shaping (Ng, Harada and Russell,
1999: the potential is the credit extended so far, and it is zero once the episode ends), which
moves credit to the turn that earned it without changing which episodes are best: no sequence
of turns, however long, earns more than its final score, and an honest episode that solves the
task (score 1, no penalty) earns the most any episode can. Rewarding the turns themselves
(rewarding activity rather than progress) is the trap that made a tau2 GRPO run loop; dense
per-turn rewards that add to the outcome instead of redistributing it are the ones reported to
cost points. Every penalty is a fault the judge itself scores down or flags (a misquote lowers
grounding, an unseen id is a hallucination, an extra question lowers the questions coefficient,
a loop fails the process check's ``no_loops``, an injection zeroes the reasoning value). With
``enabled`` off every turn but the last gets 0 and the last gets the score.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from arena.tools import tool_kind
from judging.answer import named_ids
from judging.context import JudgingContext
from judging.facts import result_facts
from judging.grounding import check_grounding
from judging.injection import injection_signals
from judging.process import LOOP_REPEATS, call_key, query_key
from judging.shopper import shopper_evidence
from judging.types import GroundingEvidence

# Arguments that name product ids a call acts on (the answer, a view, a basket).
_ID_ARGUMENTS = ("product_ids",)


@dataclass(frozen=True)
class TurnRewardConfig:
    """The turn-reward weights (the module docstring's formula); ``enabled`` off leaves only the score."""

    enabled: bool = True
    claim: float = 0.02
    revealed: float = 0.1
    misquote: float = 0.05
    unseen: float = 0.1
    repeat: float = 0.05
    loop: float = 0.05
    question: float = 0.05
    injection: float = 0.1

    def __post_init__(self) -> None:
        weights = {k: v for k, v in vars(self).items() if k != "enabled"}
        negative = sorted(k for k, v in weights.items() if not 0 <= v <= 1)
        if negative:
            raise ValueError(f"turn-reward weights must be within [0, 1]: {', '.join(negative)}")


@dataclass(frozen=True)
class Progress:
    """What the judge's checks say about an episode so far (counts only grow as it goes on)."""

    claims: frozenset[tuple[str, str, str]] = frozenset()  # (product id, kind, key) stated correctly
    misquotes: int = 0
    unseen: int = 0
    repeats: int = 0
    loops: int = 0
    revealed: int = 0
    questions: int = 0  # questions beyond those needed, and refused ones
    injections: int = 0
    scanned: int = 0  # messages the injection scan has read (it reads each message once)


@dataclass(frozen=True)
class TurnReward:
    """One turn's reward and its parts (each part signed as it enters the reward)."""

    value: float
    advance: float
    penalty: float
    parts: dict[str, float] = field(default_factory=dict)


def progress(ctx: JudgingContext, before: Progress | None = None) -> Progress:
    """Read :class:`Progress` from the judge's checks on ``ctx`` (the episode so far).

    ``before`` is the progress one step earlier: the injection scan, which counts each message's
    signals on its own, then reads only the messages since.
    """
    before = before or Progress()
    messages = ctx.trajectory.messages
    new = ctx.trajectory.model_copy(update={"messages": messages[before.scanned :]})
    grounding = check_grounding(ctx).evidence_as(GroundingEvidence)
    correct = frozenset((c.product_id, c.kind, c.key) for c in grounding.claims if c.correct)
    misquotes = sum(1 for c in grounding.claims if not c.correct)
    shopper = shopper_evidence(ctx.profile, ctx.log) if ctx.profile is not None else None
    return Progress(
        claims=correct,
        misquotes=misquotes,
        unseen=_unseen(ctx),
        repeats=_failing_repeats(ctx),
        loops=sum(max(0, n - LOOP_REPEATS + 1) for n in _call_counts(ctx).values()),
        revealed=shopper.revealed if shopper is not None else 0,
        questions=(shopper.extra + shopper.refused) if shopper is not None else 0,
        injections=before.injections + len(injection_signals(new)),
        scanned=len(messages),
    )


def _unseen(ctx: JudgingContext) -> int:
    """Product ids named by calls that no earlier (matched, successful) result had shown."""
    rec = ctx.reconciliation
    seen: set[str] = set()
    unseen = 0
    for message in ctx.trajectory.messages:
        if message.role == "tool":
            entry = rec.matched.get(message.tool_call_id or "")
            if entry is not None and entry.status == "ok" and message.tool_call_id not in rec.fabricated:
                seen |= result_facts(entry.result).product_ids
        for call in message.tool_calls or ():
            unseen += sum(1 for key in _ID_ARGUMENTS for pid in named_ids(call, key) if pid not in seen)
    return unseen


def _failing_repeats(ctx: JudgingContext) -> int:
    """Searches that repeat (by the process check's query key) an earlier search that found nothing."""
    rec = ctx.reconciliation
    failed: set[str] = set()
    repeats = 0
    for call in ctx.calls:
        if tool_kind(call.function.name) != "search":
            continue
        key = query_key(call)
        if key is not None and key in failed:
            repeats += 1
        entry = rec.matched.get(call.id)
        found = entry is not None and entry.status == "ok" and bool(result_facts(entry.result).product_ids)
        if key is not None and not found:
            failed.add(key)
    return repeats


def _call_counts(ctx: JudgingContext) -> Counter[tuple[str, str]]:
    return Counter((c.function.name, call_key(c)) for c in ctx.calls)


def turn_reward(before: Progress, after: Progress, config: TurnRewardConfig) -> TurnReward:
    """The reward of the turn that took the episode from ``before`` to ``after`` (the module's formula)."""
    if not config.enabled:
        return TurnReward(value=0.0, advance=0.0, penalty=0.0)
    gains = {
        "claim": config.claim * len(after.claims - before.claims),
        "revealed": config.revealed * max(0, after.revealed - before.revealed),
    }
    costs = {
        "misquote": config.misquote * max(0, after.misquotes - before.misquotes),
        "unseen": config.unseen * max(0, after.unseen - before.unseen),
        "repeat": config.repeat * max(0, after.repeats - before.repeats),
        "loop": config.loop * max(0, after.loops - before.loops),
        "question": config.question * max(0, after.questions - before.questions),
        "injection": config.injection * max(0, after.injections - before.injections),
    }
    advance, penalty = sum(gains.values()), sum(costs.values())
    parts = {k: round(v, 9) for k, v in gains.items() if v} | {k: -round(v, 9) for k, v in costs.items() if v}
    return TurnReward(
        value=round(advance - penalty, 9), advance=round(advance, 9), penalty=round(penalty, 9), parts=parts
    )


def settlement(score: float, advanced: float, config: TurnRewardConfig) -> float:
    """What the last turn adds to its own turn reward: the score, less the advances extended before."""
    return round(score - advanced, 9) if config.enabled else score
