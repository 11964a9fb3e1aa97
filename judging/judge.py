"""The judge: runs every check on one trajectory and folds them into a Judgment with one formula.

Every check has one contract (as inspect_ai's scorers): a function of one
``judging.context.JudgingContext`` returning a ``judging.types.Check`` with typed evidence.
``RULE_CHECKS`` lists the checks code runs; the reasoning check, which asks an LLM, is a
coroutine function run after them, and only when they have not zeroed the score already.
:func:`verdict` reads the checks' evidence into the Judgment.

The score, in one place::

    if rejected or fabricated (or, by default, a recommended id was never seen): score = 0
    outcome   = w * success * questions + (1 - w) * partial    w = success_weight (0.6)
    grounding = g0 + (1 - g0) * grounding_value           g0 = grounding_floor (0.5)
    reasoning = r0 + (1 - r0) * reasoning_value           r0 = reasoning_floor (0.8)
                1 (neutral) when the reasoning check is unscored
    score     = outcome * grounding * reasoning

``partial`` is the task's ``rule`` (mean constraint score), averaged with ``shop`` or ``budget``
for intents that have one; a success has partial 1. With these defaults any successful, clean
trajectory (at worst 1 * 0.5 * 0.8 = 0.4) outscores any failed one (below 0.4 * 1 * 1): outcome
dominates, and the coefficients only order trajectories of equal outcome.

``questions`` is the shopper check's value (``judging.shopper``), for a task with a hidden
shopper profile: ``max(0, 1 - question_penalty * extra)`` over the ``ask_user`` questions beyond
those needed; 1 for a task without a profile. It scales the success share only, so a correct
order earns up to 1.0, less for extra questions, and never less than it would as a miss (its
outcome stays at or above ``1 - w``, the most a miss's outcome reaches). That floor holds at equal
coefficients; a success with many extra questions can fall below a cleaner miss, as a success
with poor grounding can.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Any

from arena.types import EpisodeEnd, Task, ToolLogEntry, Trajectory
from judging.axis import check_axis
from judging.config import SCORER_VERSION, JudgeConfig
from judging.context import Completer, JudgingContext
from judging.errors import JudgingError
from judging.format import check_format
from judging.grounding import check_grounding
from judging.outcome import check_outcome
from judging.process import check_process
from judging.reasoning import check_reasoning, reasoning_check, reasoning_without_judge, skipped_reasoning
from judging.shopper import check_shopper
from judging.types import (
    CHECK_NAMES,
    AxisEvidence,
    Check,
    EndEvidence,
    FormatEvidence,
    GroundingEvidence,
    Judgment,
    NoEvidence,
    OutcomeEvidence,
    OutcomeScores,
    ReasoningVerdict,
    Unscored,
)
from judging.world import AtAnswer

__all__ = [
    "RULE_CHECKS",
    "SCORER_VERSION",
    "JudgeConfig",
    "final_score",
    "judge",
    "judge_rules",
    "judge_unanswered",
    "judgment_summary",
    "rule_checks",
    "verdict",
]

# The checks code runs, in the order they appear in a Judgment; then the shopper check, for a
# task with a hidden shopper profile only; the reasoning check (an LLM, asynchronous) comes last
# and only when the rules have not already zeroed the score.
RULE_CHECKS: tuple[Callable[[JudgingContext], Check], ...] = (
    check_outcome,
    check_format,
    check_grounding,
    check_process,
    check_axis,
)


def rule_checks(ctx: JudgingContext) -> list[Check]:
    """The checks code runs: ``RULE_CHECKS``, then the shopper check where the task has a profile."""
    checks = [check(ctx) for check in RULE_CHECKS]
    shopper = check_shopper(ctx)
    return [*checks, shopper] if shopper is not None else checks


def final_score(
    *,
    zeroed: bool,
    success: bool,
    partial: float,
    grounding: float | None,
    reasoning: float | None,
    config: JudgeConfig,
    questions: float | None = None,
) -> float:
    """Apply the module's formula (see the module docstring); ``questions`` None counts as 1."""
    if zeroed:
        return 0.0
    kept = 1.0 if questions is None else questions
    outcome = config.success_weight * (kept if success else 0.0) + (1 - config.success_weight) * partial
    g = 1.0 if grounding is None else config.grounding_floor + (1 - config.grounding_floor) * grounding
    r = 1.0 if reasoning is None else config.reasoning_floor + (1 - config.reasoning_floor) * reasoning
    return round(min(1.0, max(0.0, outcome * g * r)), 9)


def _context(
    task: Task,
    trajectory: Trajectory,
    *,
    log: Sequence[ToolLogEntry],
    against: AtAnswer,
    config: JudgeConfig,
    completer: Completer | None = None,
) -> JudgingContext:
    """The context the checks read: the trajectory, its log, and what its answer is judged against."""
    return JudgingContext(
        task=task,
        trajectory=trajectory,
        log=log,
        products=against.products,
        config=config,
        completer=completer,
        profile=against.profile,
        truth=against.truth,
        stock=against.stock,
    )


async def judge(
    task: Task,
    trajectory: Trajectory,
    *,
    log: Sequence[ToolLogEntry],
    against: AtAnswer,
    completer: Completer | None,
    config: JudgeConfig,
    executor: Executor | None = None,
) -> Judgment:
    """Judge one trajectory against its task, its tool log and the catalog.

    With an ``executor``, the work done by code (the rule checks, the injection scan, rendering
    the judge's prompt, folding the verdict) runs there, so that a long trajectory never holds
    the event loop; only the judge's call itself is awaited on the loop.

    Args:
        task: The task served (its id is the Judgment's, whatever the trajectory claims).
        trajectory: The miner's returned trajectory.
        log: The tool server's log of the episode, or :func:`judging.replay.replay_log` offline.
        against: What the answer is judged against: the catalog lookup, and for a world task
            the truth, stock and shopper profile at the answer's version
            (``judging.world.judged_at_answer``); ``AtAnswer(lookup)`` for a static catalog.
        completer: The LLM reasoning judge, or None to leave reasoning unscored.
        config: Thresholds, budgets and coefficients.
        executor: Where the code's work runs (a bounded pool); None: inline, on the caller's thread.

    Returns:
        The Judgment: the checks of ``RULE_CHECKS`` and the reasoning check, rejects, outcome
        components, axis, score and versions.
    """
    ctx = _context(task, trajectory, log=log, against=against, config=config, completer=completer)
    if executor is None:
        checks, ask = _rules(ctx)
    else:
        checks, ask = await asyncio.get_running_loop().run_in_executor(executor, _rules, ctx)
    checks.append(await check_reasoning(ctx) if ask else skipped_reasoning(completer, "score is 0"))
    if executor is None:
        return verdict(ctx, checks)
    return await asyncio.get_running_loop().run_in_executor(executor, verdict, ctx, checks)


def _rules(ctx: JudgingContext) -> tuple[list[Check], bool]:
    """The rule checks, and whether to ask the reasoning judge (its inputs then computed here too)."""
    checks = rule_checks(ctx)
    ask = not (_zeroed(checks, ctx.config) and not ctx.config.judge_zeroed and ctx.completer is not None)
    if ask and not ctx.injection_signals and ctx.completer is not None:
        ctx.judge_messages  # noqa: B018 (a cached property: rendered here, off the event loop)
    return checks, ask


def judge_rules(
    task: Task,
    trajectory: Trajectory,
    *,
    log: Sequence[ToolLogEntry],
    against: AtAnswer,
    config: JudgeConfig,
) -> Judgment:
    """Judge with the rule checks alone, synchronously: :func:`judge` with no completer.

    The reasoning check is what ``judge(..., completer=None)`` makes of it: 0 when code finds the
    miner's text addressing the judge, else unscored (``disabled``); for callers that re-judge
    many trajectories without an LLM (curation's conversion stage, the environment) and need no
    event loop.
    """
    ctx = _context(task, trajectory, log=log, against=against, config=config)
    checks = rule_checks(ctx)
    checks.append(reasoning_check(reasoning_without_judge(ctx.injection_signals)))
    return verdict(ctx, checks)


def judge_with_reasoning(
    task: Task,
    trajectory: Trajectory,
    *,
    log: Sequence[ToolLogEntry],
    against: AtAnswer,
    config: JudgeConfig,
    reasoning: Check,
) -> Judgment:
    """Judge with the rule checks and a reasoning check already given, synchronously.

    An LLM's verdict cannot be asked again and be sure to come back the same; an audit
    (``neurons.audit``) re-runs every rule check from the episode's log and takes the reasoning
    check the validator published, so the score is reproduced exactly and the rules are checked.

    Raises:
        JudgingError: ``reasoning`` is not a reasoning check.
    """
    if reasoning.name != "reasoning":
        raise JudgingError(f"a reasoning check, not {reasoning.name!r}")
    ctx = _context(task, trajectory, log=log, against=against, config=config)
    return verdict(ctx, [*rule_checks(ctx), reasoning])


def _check(checks: Sequence[Check], name: str) -> Check:
    found = next((c for c in checks if c.name == name), None)
    if found is None:
        raise JudgingError(f"no {name} check among {[c.name for c in checks]}")
    return found


def _zeroed(checks: Sequence[Check], config: JudgeConfig) -> bool:
    """Whether the rules zero the score: a reject, a fabricated result, a hallucinated id (by default)."""
    rejects = _check(checks, "format").evidence_as(FormatEvidence).rejects
    grounding = _check(checks, "grounding").evidence_as(GroundingEvidence)
    return bool(rejects or grounding.fabricated) or (
        config.hallucination_zeroes and bool(grounding.hallucinated_product_ids)
    )


def verdict(ctx: JudgingContext, checks: Sequence[Check]) -> Judgment:
    """Fold a trajectory's checks into its Judgment with the score formula (the module docstring).

    The Judgment reads its outcome, rejects, axis, ids, process counts and reasoning verdict from
    the checks' evidence (``judging.types.Judgment``): only the score is computed here.
    """
    config = ctx.config
    outcome = _check(checks, "outcome").evidence_as(OutcomeEvidence)
    if outcome.scores is None:
        raise JudgingError("the outcome check carries no components")
    shopper_check = next((c for c in checks if c.name == "shopper"), None)
    score = final_score(
        zeroed=_zeroed(checks, config),
        success=outcome.success,
        partial=outcome.partial,
        grounding=_check(checks, "grounding").value,
        reasoning=_check(checks, "reasoning").value,
        config=config,
        questions=shopper_check.value if shopper_check is not None else None,
    )
    return Judgment(
        task_id=ctx.task.task_id,
        episode_id=ctx.trajectory.episode_id,
        miner_hotkey=ctx.trajectory.miner_hotkey,
        score=score,
        checks=tuple(checks),
        end="completed",
        versions=config.versions(judge_model=ctx.completer.model if ctx.completer else None),
    )


# An episode without a trajectory: a miner fault scores these checks 0 (the end reason is their
# evidence); the others have nothing to look at and are unscored, the axis unknown.
_ZEROED_WHEN_UNANSWERED = ("outcome", "format")


def _unanswered_check(name: str, end: EpisodeEnd, reason: str) -> Check:
    if name in _ZEROED_WHEN_UNANSWERED:
        return Check(name=name, value=0.0, explanation=reason, evidence=EndEvidence(end=end))
    evidence = AxisEvidence(label="unknown") if name == "axis" else NoEvidence()
    return Check(name=name, value=None, explanation=reason, evidence=evidence)


def judge_unanswered(
    task: Task,
    *,
    episode_id: str,
    miner_hotkey: str,
    end: EpisodeEnd,
    config: JudgeConfig,
    detail: str = "",
) -> Judgment:
    """Judge an episode that returned no usable trajectory (a miner fault): score 0, the end reason kept.

    ``detail`` (free text) says more where the end alone does not, e.g. why a returned
    trajectory could not be kept. One check per name of ``CHECK_NAMES``; its checks carry no
    outcome components or reasoning verdict, so the Judgment states those (zero, and not asked).
    """
    reason = f"no trajectory: episode ended {end}" + (f" ({detail})" if detail else "")
    return Judgment(
        task_id=task.task_id,
        episode_id=episode_id,
        miner_hotkey=miner_hotkey,
        score=0.0,
        checks=tuple(_unanswered_check(name, end, reason) for name in CHECK_NAMES),
        end=end,
        versions=config.versions(judge_model=None),
        outcome=OutcomeScores(
            rule=0.0,
            gt=0.0,
            product=0.0,
            shop=0.0 if task.intent == "shop" else None,
            budget=0.0 if task.intent == "voucher" else None,
        ),
        reasoning=ReasoningVerdict(unscored=Unscored(cause="skipped", detail="no trajectory")),
    )


def judgment_summary(judgment: Judgment, *, warnings: Sequence[str] = ()) -> dict[str, Any]:
    """Return the `arena judge` JSON contract for a Judgment (keys other tools rely on)."""
    outcome = judgment.outcome
    return {
        "task_id": judgment.task_id,
        "success": judgment.success,
        "score": judgment.score,
        "outcome": {
            "rule": outcome.rule,
            "gt": outcome.gt,
            "product": outcome.product,
            "shop": outcome.shop,
            "budget": outcome.budget,
        },
        "checks": [{"name": c.name, "value": c.value, "explanation": c.explanation} for c in judgment.checks],
        "rejects": list(judgment.rejects),
        "axis": judgment.axis,
        "hallucinated_product_ids": list(judgment.hallucinated_product_ids),
        "fabricated_call_ids": list(judgment.fabricated_call_ids),
        "reasoning": {"value": judgment.reasoning.value, "model": judgment.reasoning.model},
        "versions": judgment.versions.model_dump(mode="json"),
        "warnings": list(warnings),
    }
