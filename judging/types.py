"""Judging vocabulary: a check's verdict, the outcome components, process counts and the Judgment."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field, model_validator

from arena.types import Frozen, content_hash

Axis = Literal["A", "B", "mixed", "unknown"]
AXES: tuple[Axis, ...] = ("A", "B", "mixed", "unknown")
CHECK_NAMES = ("outcome", "format", "grounding", "process", "axis", "reasoning")
# Hard rejects: any one of these zeroes the trajectory's score.
Reject = Literal[
    "unanswered_tool_call",
    "recommend_not_once",
    "unknown_product_id",
    "too_long",
    "no_final_action",
]
REJECTS: tuple[Reject, ...] = get_args(Reject)


class Check(Frozen):
    """One check's verdict: a value in [0, 1], or None when it could not be scored.

    None ("unscored") is not zero: an unscored check is left out of the score, never counted
    against the miner.
    """

    name: str
    value: float | None = Field(default=None, ge=0, le=1)
    explanation: str = ""
    evidence: dict[str, Any] = Field(default_factory=dict)

    @property
    def scored(self) -> bool:
        """Whether the check produced a value."""
        return self.value is not None


class OutcomeScores(Frozen):
    """ShoppingBench's outcome components for one trajectory, averaged over gold items.

    ``shop`` is None for intents without a shop condition, ``budget`` likewise for voucher.
    ``fields`` holds the per-field match rates (title, price, service, sku_attrs).
    """

    rule: float = Field(ge=0, le=1)
    gt: float = Field(ge=0, le=1)
    product: float = Field(ge=0, le=1)
    shop: float | None = Field(default=None, ge=0, le=1)
    budget: float | None = Field(default=None, ge=0, le=1)
    fields: dict[str, float] = Field(default_factory=dict)


class ProcessStats(Frozen):
    """Raw counts describing how the agent worked (used by the process check and curation)."""

    tool_calls: int = Field(default=0, ge=0)
    searches: int = Field(default=0, ge=0)
    reformulations: int = Field(default=0, ge=0)
    views: int = Field(default=0, ge=0)
    verified: bool = False
    loops: int = Field(default=0, ge=0)
    depth: int = Field(default=0, ge=0)
    tokens: int = Field(default=0, ge=0)


class Versions(Frozen):
    """Everything a verdict depends on, so two Judgments are comparable only when these agree."""

    scorer: str
    judge_model: str | None = None
    prompt_hash: str | None = None
    catalog_version: str | None = None
    toolset: str | None = None


class ReasoningVerdict(Frozen):
    """The LLM reasoning judge's part: a value on the allowed scale, or None (unscored)."""

    value: float | None = Field(default=None, ge=0, le=1)
    model: str | None = None
    labels: tuple[str, ...] = ()
    injection_flagged: bool = False
    unscored_cause: str | None = None


class Judgment(Frozen):
    """The verdict on one trajectory: checks, rejects, outcome, axis, score and versions.

    ``success`` is the outcome verdict alone (every constraint met). ``score`` folds in
    everything: rejects and fabrication zero it, grounding and reasoning scale it.
    ``content_hash`` addresses the verdict (everything but the hash itself).
    """

    task_id: str
    episode_id: str
    miner_hotkey: str
    success: bool
    score: float = Field(ge=0, le=1)
    outcome: OutcomeScores
    checks: tuple[Check, ...]
    rejects: tuple[Reject, ...] = ()
    axis: Axis = "unknown"
    hallucinated_product_ids: tuple[str, ...] = ()
    fabricated_call_ids: tuple[str, ...] = ()
    process: ProcessStats = Field(default_factory=ProcessStats)
    reasoning: ReasoningVerdict = Field(default_factory=ReasoningVerdict)
    end: str = "completed"
    versions: Versions
    content_hash: str = ""

    @model_validator(mode="after")
    def _address(self) -> Judgment:
        expected = judgment_content_hash(self)
        if not self.content_hash:
            object.__setattr__(self, "content_hash", expected)
        elif self.content_hash != expected:
            raise ValueError("judgment content_hash does not match its content")
        return self

    def check(self, name: str) -> Check | None:
        """Return the check called ``name``, or None."""
        return next((c for c in self.checks if c.name == name), None)

    @property
    def reasoning_outage(self) -> bool:
        """Whether a configured reasoning judge was unavailable (timeout, error, unparseable reply).

        Such a judgment's score is provisional: weights should leave it out (scored as None),
        so that an outage on our side never moves weights.
        """
        cause = self.reasoning.unscored_cause or ""
        return self.reasoning.value is None and cause.split(":")[0] in ("timeout", "error", "unparseable")

    @property
    def fabricated(self) -> bool:
        """Whether any tool result in the trajectory was not what the tool server returned."""
        return bool(self.fabricated_call_ids)


def judgment_content_hash(judgment: Judgment) -> str:
    """Compute a Judgment's content address (all fields except the hash itself)."""
    return content_hash(judgment.model_dump(mode="json", exclude={"content_hash"}), prefix="j-")
