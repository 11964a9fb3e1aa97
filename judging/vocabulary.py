"""The judging vocabulary's plain values: axes, hard rejects, outcome components, process counts, causes.

Evidence, ``Check`` and ``Judgment`` are built from these in :mod:`judging.types`, which is where
the rest of the code imports them from (it re-exports every name here).
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field

from arena.types import Frozen, Sparse

# "A-attested": every logged call matched a completion the validator's inference gateway served
# (``arena.inference``); "A": the model chose the calls, as far as the structure shows.
Axis = Literal["A-attested", "A", "B", "mixed", "unknown"]
AXES: tuple[Axis, ...] = ("A-attested", "A", "B", "mixed", "unknown")
ATTESTED: Axis = "A-attested"
CHECK_NAMES = ("outcome", "format", "grounding", "process", "axis", "reasoning")
# Hard rejects: any one of these zeroes the trajectory's score.
Reject = Literal[
    "unanswered_tool_call",
    "recommend_not_once",
    "unknown_product_id",
    "too_long",
    "no_final_action",
    "too_many_turns",
    "duplicate_work",  # no longer set (copies share credit: ``judging.duplicates``); stored judgments hold it
]
REJECTS: tuple[Reject, ...] = get_args(Reject)
# Why a gold item's position failed as a whole (not a constraint): the pick was out of stock in
# the world as it was at the answer (``judging.world``).
ItemReason = Literal["out_of_stock_at_answer"]


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


class ProcessStats(Sparse):
    """Raw counts describing how the agent worked (used by the process check and curation).

    ``questions`` (``ask_user`` calls the tool server logged) and ``questions_needed`` (the task's
    held-back constraints) are left out of the stored form at 0, so verdicts stored before the
    simulated shopper keep their shape and content hash.
    """

    tool_calls: int = Field(default=0, ge=0)
    searches: int = Field(default=0, ge=0)
    reformulations: int = Field(default=0, ge=0)
    views: int = Field(default=0, ge=0)
    verified: bool = False
    loops: int = Field(default=0, ge=0)
    depth: int = Field(default=0, ge=0)
    tokens: int = Field(default=0, ge=0)
    questions: int = Field(default=0, ge=0)
    questions_needed: int = Field(default=0, ge=0)

    omitted_at_default = ("questions", "questions_needed")


class Versions(Frozen):
    """Everything a verdict depends on, so two Judgments are comparable only when these agree."""

    scorer: str
    judge_model: str | None = None
    prompt_hash: str | None = None
    catalog_version: str | None = None
    toolset: str | None = None


# Why the reasoning check is unscored. Only the outages (the judge's own failures: timeouts,
# transport errors and 5xx, replies outside the schema) keep a judgment out of the weights;
# "disabled" (no judge configured) and "skipped" (the score was already 0, or there was no
# trajectory) are decisions, and "refused" (the judge answered our request with a 4xx) is our
# own fault: logged, alerted, and never a reason to drop a miner's episode from the weights.
UnscoredCause = Literal["disabled", "skipped", "timeout", "error", "unparseable", "refused"]
UNSCORED_CAUSES: tuple[UnscoredCause, ...] = get_args(UnscoredCause)
OutageCause = Literal["timeout", "error", "unparseable"]
OUTAGE_CAUSES: tuple[OutageCause, ...] = get_args(OutageCause)


class Unscored(Frozen):
    """Why a check has no value: a typed cause and a free-text detail (never parsed)."""

    cause: UnscoredCause
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.cause}: {self.detail}" if self.detail else self.cause


class ReasoningVerdict(Frozen):
    """The LLM reasoning judge's part: a value on the allowed scale, or None with why (``unscored``)."""

    value: float | None = Field(default=None, ge=0, le=1)
    model: str | None = None
    labels: tuple[str, ...] = ()
    injection_flagged: bool = False
    unscored: Unscored | None = None

    @property
    def outage(self) -> bool:
        """Whether the value is missing because the configured judge failed (timeout, error, bad reply)."""
        return self.value is None and self.unscored is not None and self.unscored.cause in OUTAGE_CAUSES
