"""A check's verdict and its typed evidence (one model per check), and how stored evidence reads back.

Every check returns a :class:`Check`: a value in [0, 1] or None (unscored), an explanation,
and evidence of the check's own type (``OutcomeEvidence`` ... ``ReasoningEvidence``). A stored
check reads back with the same evidence type (``EVIDENCE``, by check name); a stored shape no
model knows (hand-made checks, older data) reads back as the plain dict it was. The rest of the
code imports these from ``judging.types``.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import (
    Field,
    SerializeAsAny,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from arena.types import Frozen, Sparse
from judging.vocabulary import (
    REJECTS,
    Axis,
    ItemReason,
    OutcomeScores,
    ProcessStats,
    Reject,
    Unscored,
)


class Evidence(Frozen):
    """Base of a check's typed evidence."""


class NoEvidence(Evidence):
    """No evidence (a check that could not look at anything)."""


class EndEvidence(Evidence):
    """How an episode without a usable trajectory ended (``judging.judge.judge_unanswered``)."""

    end: str


class OutcomeItem(Sparse):
    """One gold item's position in the answer: the id there, whether it exists, and what it broke."""

    position: int
    product_id: str | None
    found: bool
    gt: bool | None = None  # None (left out) where no product stood at the position
    rule: float | None = None
    failed: tuple[str, ...] = ()
    reason: ItemReason | None = None  # the position failed as a whole (left out when None)

    omitted_at_default = ("gt", "rule", "reason")


class OutcomeEvidence(Evidence, Sparse):
    """The outcome check's evidence: the verdict, the partial credit, the components and each item."""

    omitted_at_default = ("scores",)

    success: bool
    partial: float
    items: tuple[OutcomeItem, ...]
    scores: OutcomeScores | None = None  # absent from judgments stored before it was kept here


class BadStep(Frozen):
    """A tool call that is not well formed, and how."""

    call_id: str
    problem: str


class FormatEvidence(Evidence):
    """The format check's evidence: each hard reject's reason, the malformed steps, the token estimate."""

    reasons: dict[Reject, str]
    bad_steps: tuple[BadStep, ...]
    tokens: int

    @property
    def rejects(self) -> tuple[Reject, ...]:
        """The hard rejects found, in the fixed order of ``REJECTS``."""
        return tuple(r for r in REJECTS if r in self.reasons)


class Claim(Sparse):
    """One statement an assistant makes about a product (``judging.claims``), and whether it holds."""

    product_id: str
    kind: Literal["price", "attribute"]
    key: str
    stated: str
    actual: str
    correct: bool
    # The world version ``actual`` is from (a world that changes during the episode): the
    # version of the result that showed the price. None over a static catalog, and then left
    # out of the dump, so the content hashes of judgments without worlds are what they were.
    world_version: int | None = Field(default=None, ge=0)

    omitted_at_default = ("world_version",)


class GroundingEvidence(Evidence):
    """The grounding check's evidence: what reconciliation with the tool log and the catalog found."""

    fabricated: dict[str, str]  # call id -> why its tool message is not what the server returned
    hidden_calls: tuple[str, ...]
    hallucinated_product_ids: tuple[str, ...]
    claims: tuple[Claim, ...]
    shown: float
    ids_grounded: float
    claims_correct: float

    @property
    def fabricated_call_ids(self) -> tuple[str, ...]:
        """The fabricated call ids, sorted."""
        return tuple(sorted(self.fabricated))


class DuplicateEvidence(Evidence):
    """The duplicate check's evidence: the work's address and the episode that brought it first.

    No longer made (copies share credit at weights time: ``judging.duplicates``); judgments
    stored before that carry it and must still read back.
    """

    work_hash: str
    first_episode_id: str


class ProcessEvidence(Evidence):
    """The process check's evidence: the weighted parts and the raw counts."""

    parts: dict[str, float]
    stats: ProcessStats


class ShopperEvidence(Evidence):
    """The shopper check's evidence: questions asked and needed, what they revealed, what was refused.

    ``asked`` counts the episode's logged ``ask_user`` calls (refused ones too); ``needed`` is the
    number of held-back constraints (one question each); ``extra`` is ``asked - needed`` where
    positive; ``revealed`` how many held-back constraints the answers stated.
    """

    asked: int = Field(ge=0)
    needed: int = Field(ge=0)
    extra: int = Field(ge=0)
    revealed: int = Field(ge=0)
    refused: int = Field(default=0, ge=0)


class AxisEvidence(Evidence, Sparse):
    """The axis check's evidence: the label, and either the nonce counts or the step counts behind it.

    Attested (nonces): ``attested`` and ``nonces``. Inferred: ``attested`` false, ``steps``,
    ``kinds`` (driven / narrated / silent), ``hidden_calls``, ``verbatim_query_searches`` and,
    where some nonces were invalid, ``invalid_nonces``. ``degenerate`` marks a trajectory with no
    decision in it (at most one call and no answer: ``judging.axis.degenerate``), labelled
    unknown. Nothing but the label when there was no trajectory.
    """

    omitted_at_default = (
        "attested",
        "nonces",
        "steps",
        "kinds",
        "hidden_calls",
        "verbatim_query_searches",
        "invalid_nonces",
        "degenerate",
    )

    label: Axis
    attested: bool | None = None
    nonces: dict[str, int] | None = None
    steps: int | None = None
    kinds: dict[str, int] | None = None
    hidden_calls: int | None = None
    verbatim_query_searches: int | None = None
    invalid_nonces: int | None = None
    degenerate: bool | None = None


class ReasoningEvidence(Evidence, Sparse):
    """The reasoning check's evidence: the judge model, its labels, the prompt, and why it is unscored."""

    omitted_at_default = ("injection_flagged", "unscored")

    model: str | None
    labels: tuple[str, ...]
    prompt_hash: str
    injection_flagged: bool = False
    unscored: Unscored | None = None


# The evidence types each check's stored evidence may read back as, tried in order.
EVIDENCE: dict[str, tuple[type[Evidence], ...]] = {
    "outcome": (OutcomeEvidence, EndEvidence),
    "format": (FormatEvidence, EndEvidence),
    "grounding": (GroundingEvidence,),
    "process": (ProcessEvidence,),
    "axis": (AxisEvidence,),
    "reasoning": (ReasoningEvidence,),
    "duplicate": (DuplicateEvidence,),
    "shopper": (ShopperEvidence,),
}
E = TypeVar("E", bound=Evidence)
# Per evidence type: (its required keys, all its keys); a stored dict is tried only where it fits.
_KEYS = {
    model: (
        frozenset(n for n, f in model.model_fields.items() if f.is_required()),
        frozenset(model.model_fields),
    )
    for models in EVIDENCE.values()
    for model in models
}


_NO_EVIDENCE = NoEvidence()  # frozen, so one instance serves every empty evidence read back


def _typed_evidence(name: str, value: dict[str, Any]) -> Evidence | dict[str, Any]:
    if not value:
        return _NO_EVIDENCE
    keys = value.keys()
    for model in EVIDENCE.get(name, ()):
        required, known = _KEYS[model]
        if required <= keys <= known:
            try:
                return model.model_validate(value)
            except ValidationError:
                continue
    return value


class Check(Frozen):
    """One check's verdict: a value in [0, 1], or None when it could not be scored.

    None ("unscored") is not zero: an unscored check is left out of the score, never counted
    against the miner.
    """

    name: str
    value: float | None = Field(default=None, ge=0, le=1)
    explanation: str = ""
    evidence: SerializeAsAny[Evidence] | dict[str, Any] = Field(default_factory=NoEvidence)

    @field_validator("evidence", mode="before")
    @classmethod
    def _type_the_evidence(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, dict):
            return _typed_evidence(str(info.data.get("name", "")), value)
        return value

    @property
    def scored(self) -> bool:
        """Whether the check produced a value."""
        return self.value is not None

    def evidence_as(self, kind: type[E]) -> E:
        """The evidence as ``kind``.

        Raises:
            TypeError: the evidence is of another type (a check of another name, or a stored
                shape no evidence model reads).
        """
        if not isinstance(self.evidence, kind):
            raise TypeError(f"check {self.name!r} has {type(self.evidence).__name__}, not {kind.__name__}")
        return self.evidence
