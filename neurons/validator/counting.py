"""What a stored episode adds to the validator's metrics: end, verdict and axis, judge outages, questions."""

from __future__ import annotations

from judging.types import Judgment, ShopperEvidence
from neurons import metrics


def verdict(judgment: Judgment) -> str:
    """The ``arena_judgments_total`` verdict: success, failure, rejected (zeroed) or unanswered."""
    if judgment.end != "completed":
        return "unanswered"
    if judgment.success:
        return "success"
    zeroed = judgment.rejects or judgment.fabricated_call_ids or judgment.hallucinated_product_ids
    return "rejected" if zeroed else "failure"


def questions_asked(judgment: Judgment) -> int | None:
    """The shopper questions the judge counted (its ``shopper`` check: refused ones too); None: none counted.

    Only an episode judged with a shopper profile has that check: not one without a trajectory
    to judge, nor a task or tool set without a shopper.
    """
    check = judgment.check("shopper")
    if check is None or check.evidence is None:
        return None
    return check.evidence_as(ShopperEvidence).asked


def count_stored(judgment: Judgment) -> None:
    """Count a stored episode: its end, verdict and axis, an outage or refusal of the judge, its questions."""
    metrics.EPISODES.labels(judgment.end).inc()
    asked = questions_asked(judgment)
    if asked is not None:  # the judge's count, the one the score used
        metrics.SHOPPER_QUESTIONS.observe(asked)
    metrics.JUDGMENTS.labels(verdict(judgment), judgment.axis).inc()
    unscored = judgment.reasoning.unscored
    if judgment.reasoning_outage and unscored is not None:
        metrics.JUDGE_UNSCORED.labels(unscored.cause).inc()
    elif unscored is not None and unscored.cause == "refused":
        metrics.JUDGE_REFUSALS.inc()
