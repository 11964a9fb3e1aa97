"""The judge: runs every check on one trajectory and folds them into a Judgment with one formula.

The score, in one place::

    if rejected or fabricated (or, by default, a recommended id was never seen): score = 0
    outcome   = w * success + (1 - w) * partial           w = success_weight (0.6)
    grounding = g0 + (1 - g0) * grounding_value           g0 = grounding_floor (0.5)
    reasoning = r0 + (1 - r0) * reasoning_value           r0 = reasoning_floor (0.8)
                1 (neutral) when the reasoning check is unscored
    score     = outcome * grounding * reasoning

``partial`` is the task's ``rule`` (mean constraint score), averaged with ``shop`` or ``budget``
for intents that have one; a success has partial 1. With these defaults any successful, clean
trajectory (at worst 1 * 0.5 * 0.8 = 0.4) outscores any failed one (below 0.4 * 1 * 1): outcome
dominates, and the coefficients only order trajectories of equal outcome.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from arena.tools import DEFAULT_TOOLSET, TOOLSETS
from arena.types import EpisodeEnd, Product, Task, ToolLogEntry, Trajectory, content_hash
from judging.answer import final_answer
from judging.axis import axis_check, classify_axis
from judging.format import check_format
from judging.grounding import check_grounding
from judging.outcome import ProductLookup, outcome_check, score_outcome
from judging.process import check_process
from judging.reasoning import SKIPPED, Completer, judge_reasoning, prompt_hash, reasoning_check
from judging.titles import LEXICAL, TitleMatcher
from judging.types import Check, Judgment, OutcomeScores, ReasoningVerdict, Versions

SCORER_VERSION = "arena-judge/1"


@dataclass(frozen=True)
class JudgeConfig:
    """Everything the verdict depends on besides its inputs (frozen; fingerprinted into the version)."""

    toolset: str = DEFAULT_TOOLSET
    title_matcher: TitleMatcher = field(default=LEXICAL)
    title_threshold: float = 0.7
    knowledge_title_threshold: float = 0.8
    token_budget: int = 32_768
    success_weight: float = 0.6
    grounding_floor: float = 0.5
    reasoning_floor: float = 0.8
    hallucination_zeroes: bool = True
    judge_retries: int = 2
    judge_timeout_s: float = 60.0
    judge_backoff_s: float = 1.0
    judge_zeroed: bool = False  # also ask the LLM about trajectories whose score is already 0
    catalog_version: str | None = None

    def __post_init__(self) -> None:
        for name in ("title_threshold", "knowledge_title_threshold", "success_weight"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be within [0, 1]")
        for name in ("grounding_floor", "reasoning_floor"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be within (0, 1]: outcome must dominate")
        if self.token_budget < 1 or self.judge_retries < 0 or self.judge_timeout_s <= 0:
            raise ValueError("token_budget, judge_retries and judge_timeout_s must be positive")

    def scoring_fields(self) -> dict[str, Any]:
        """Return the fields that change a score (not retries or timeouts), for the version fingerprint."""
        skip = {"title_matcher", "judge_retries", "judge_timeout_s", "judge_backoff_s", "catalog_version"}
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}
        return values | {"title_matcher": self.title_matcher.name}

    def versions(self, *, judge_model: str | None) -> Versions:
        """Return the Versions: scorer with config fingerprint, judge model, prompt hash, catalog, toolset."""
        fingerprint = content_hash(self.scoring_fields())[:12]
        return Versions(
            scorer=f"{SCORER_VERSION} cfg={fingerprint}",
            judge_model=judge_model,
            prompt_hash=prompt_hash(),
            catalog_version=self.catalog_version,
            toolset=self.toolset,
        )


def final_score(
    *,
    zeroed: bool,
    success: bool,
    partial: float,
    grounding: float | None,
    reasoning: float | None,
    config: JudgeConfig,
) -> float:
    """Apply the module's formula (see the module docstring)."""
    if zeroed:
        return 0.0
    outcome = config.success_weight * (1.0 if success else 0.0) + (1 - config.success_weight) * partial
    g = 1.0 if grounding is None else config.grounding_floor + (1 - config.grounding_floor) * grounding
    r = 1.0 if reasoning is None else config.reasoning_floor + (1 - config.reasoning_floor) * reasoning
    return round(min(1.0, max(0.0, outcome * g * r)), 9)


async def judge(
    task: Task,
    trajectory: Trajectory,
    *,
    log: Sequence[ToolLogEntry],
    products: ProductLookup,
    completer: Completer | None,
    config: JudgeConfig,
) -> Judgment:
    """Judge one trajectory against its task, its tool log and the catalog.

    Args:
        task: The task served (its id is the Judgment's, whatever the trajectory claims).
        trajectory: The miner's returned trajectory.
        log: The tool server's log of the episode, or :func:`judging.replay.replay_log` offline.
        products: Catalog lookup: ids -> products (unknown ids absent).
        completer: The LLM reasoning judge, or None to leave reasoning unscored.
        config: Thresholds, budgets and coefficients.

    Returns:
        The Judgment: six checks, rejects, outcome components, axis, score and versions.
    """
    answer = final_answer(trajectory)
    found: Mapping[str, Product] = products(list(answer.product_ids)) if answer.product_ids else {}
    known = [tool.name for tool in TOOLSETS.get(config.toolset, TOOLSETS[DEFAULT_TOOLSET])]
    fmt = check_format(trajectory, answer, found, known_tools=known, token_budget=config.token_budget)
    grounding = check_grounding(trajectory, log, answer, products)
    result = score_outcome(
        task,
        answer.product_ids,
        found,
        matcher=config.title_matcher,
        title_threshold=config.title_threshold,
        knowledge_title_threshold=config.knowledge_title_threshold,
    )
    outcome_value = config.success_weight * result.success + (1 - config.success_weight) * result.partial
    process, stats = check_process(trajectory, answer, tokens=fmt.tokens)
    axis = classify_axis(trajectory, log, hidden_calls=len(grounding.hidden_calls))
    zeroed = bool(fmt.rejects or grounding.fabricated_call_ids) or (
        config.hallucination_zeroes and bool(grounding.hallucinated_product_ids)
    )
    if zeroed and not config.judge_zeroed and completer is not None:
        verdict = ReasoningVerdict(value=None, model=completer.model, unscored_cause=f"{SKIPPED}: score is 0")
    else:
        verdict = await judge_reasoning(
            task,
            trajectory,
            completer,
            retries=config.judge_retries,
            timeout_s=config.judge_timeout_s,
            backoff_s=config.judge_backoff_s,
        )
    score = final_score(
        zeroed=zeroed,
        success=result.success,
        partial=result.partial,
        grounding=grounding.check.value,
        reasoning=verdict.value,
        config=config,
    )
    checks = (
        outcome_check(result, answered=answer.call is not None and not answer.error, value=outcome_value),
        fmt.check,
        grounding.check,
        process,
        axis_check(axis),
        reasoning_check(verdict),
    )
    return Judgment(
        task_id=task.task_id,
        episode_id=trajectory.episode_id,
        miner_hotkey=trajectory.miner_hotkey,
        success=result.success,
        score=score,
        outcome=result.scores,
        checks=checks,
        rejects=fmt.rejects,
        axis=axis.label,
        hallucinated_product_ids=grounding.hallucinated_product_ids,
        fabricated_call_ids=grounding.fabricated_call_ids,
        process=stats,
        reasoning=verdict,
        end="completed",
        versions=config.versions(judge_model=completer.model if completer else None),
    )


def judge_unanswered(
    task: Task, *, episode_id: str, miner_hotkey: str, end: EpisodeEnd, config: JudgeConfig
) -> Judgment:
    """Judge an episode that returned no usable trajectory (a miner fault): score 0, the end reason kept."""
    reason = f"no trajectory: episode ended {end}"
    outcome = OutcomeScores(
        rule=0.0,
        gt=0.0,
        product=0.0,
        shop=0.0 if task.intent == "shop" else None,
        budget=0.0 if task.intent == "voucher" else None,
    )
    checks = (
        Check(name="outcome", value=0.0, explanation=reason, evidence={"end": end}),
        Check(name="format", value=0.0, explanation=reason, evidence={"end": end}),
        Check(name="grounding", value=None, explanation=reason),
        Check(name="process", value=None, explanation=reason),
        Check(name="axis", value=None, explanation=reason, evidence={"label": "unknown"}),
        Check(name="reasoning", value=None, explanation=reason),
    )
    return Judgment(
        task_id=task.task_id,
        episode_id=episode_id,
        miner_hotkey=miner_hotkey,
        success=False,
        score=0.0,
        outcome=outcome,
        checks=checks,
        axis="unknown",
        reasoning=ReasoningVerdict(value=None, unscored_cause=f"{SKIPPED}: no trajectory"),
        end=end,
        versions=config.versions(judge_model=None),
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
