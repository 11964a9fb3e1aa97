"""What a stored episode adds to the validator's metrics: its end, its verdict and axis, judge outages."""

from __future__ import annotations

from judging.types import Judgment
from neurons import metrics


def verdict(judgment: Judgment) -> str:
    """The ``arena_judgments_total`` verdict: success, failure, rejected (zeroed) or unanswered."""
    if judgment.end != "completed":
        return "unanswered"
    if judgment.success:
        return "success"
    zeroed = judgment.rejects or judgment.fabricated_call_ids or judgment.hallucinated_product_ids
    return "rejected" if zeroed else "failure"


def count_stored(judgment: Judgment) -> None:
    """Count a stored episode: its end, its verdict and axis, an outage or a refusal of the judge."""
    metrics.EPISODES.labels(judgment.end).inc()
    metrics.JUDGMENTS.labels(verdict(judgment), judgment.axis).inc()
    unscored = judgment.reasoning.unscored
    if judgment.reasoning_outage and unscored is not None:
        metrics.JUDGE_UNSCORED.labels(unscored.cause).inc()
    elif unscored is not None and unscored.cause == "refused":
        metrics.JUDGE_REFUSALS.inc()
