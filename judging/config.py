"""What a verdict depends on besides its inputs: thresholds, budgets, coefficients, and their fingerprint."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from arena.tools import DEFAULT_TOOLSET, TOOLSETS
from arena.types import content_hash
from judging.reasoning_prompt import prompt_hash
from judging.titles import LEXICAL, TitleMatcher
from judging.types import Versions

SCORER_VERSION = "arena-judge/1"
# Messages a trajectory may hold: tau2-bench stops an episode at 200 steps; more is rejected.
DEFAULT_MAX_TURNS = 200


class JudgeCalls(BaseModel):
    """How the reasoning judge is called: a timeout per call, retries with doubling backoff, then unscored.

    Its field names are the validator's settings too: ``neurons.validator.settings.JudgeSettings``
    extends this model (``ARENA_JUDGE__TIMEOUT``, ``__RETRIES``, ``__BACKOFF``), so each knob has
    one name, one default and one bound.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout: float = Field(default=60.0, gt=0, le=3600, description="Seconds per call before a retry.")
    retries: int = Field(default=2, ge=0, le=10, description="Retries with backoff, then unscored.")
    backoff: float = Field(
        default=1.0, ge=0, le=60, description="Seconds before the first retry; doubled before each next."
    )


@dataclass(frozen=True)
class JudgeConfig:
    """Everything the verdict depends on besides its inputs (frozen; fingerprinted into the version)."""

    toolset: str = DEFAULT_TOOLSET
    title_matcher: TitleMatcher = field(default=LEXICAL)
    title_threshold: float = 0.7
    knowledge_title_threshold: float = 0.8
    token_budget: int = 32_768
    max_turns: int = DEFAULT_MAX_TURNS
    success_weight: float = 0.6
    grounding_floor: float = 0.5
    reasoning_floor: float = 0.8
    # What each ask_user question beyond those needed takes off a success's share (success_weight).
    question_penalty: float = 0.2
    hallucination_zeroes: bool = True
    calls: JudgeCalls = field(default_factory=JudgeCalls)  # how the LLM judge is called: not a score's
    judge_zeroed: bool = False  # also ask the LLM about trajectories whose score is already 0
    catalog_version: str | None = None

    def __post_init__(self) -> None:
        for name in ("title_threshold", "knowledge_title_threshold", "success_weight", "question_penalty"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be within [0, 1]")
        for name in ("grounding_floor", "reasoning_floor"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be within (0, 1]: outcome must dominate")
        if self.token_budget < 1 or self.max_turns < 1:
            raise ValueError("token_budget and max_turns must be positive")

    @property
    def known_tools(self) -> tuple[str, ...]:
        """The tool names of the episode's tool set (the default set for an unknown name)."""
        return tuple(tool.name for tool in TOOLSETS.get(self.toolset, TOOLSETS[DEFAULT_TOOLSET]))

    def scoring_fields(self) -> dict[str, Any]:
        """Return the fields that change a score (not retries or timeouts), for the version fingerprint."""
        skip = {"title_matcher", "calls", "catalog_version"}
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
