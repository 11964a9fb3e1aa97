"""The labels a kept trace carries into the export: positive (SFT's entry, KTO's label) and grounded (DPO)."""

from __future__ import annotations

from curation.config import CurationConfig
from judging.types import Judgment


def positive(judgment: Judgment, config: CurationConfig) -> bool:
    """The absolute KTO label (and SFT's entry ticket): success, a good enough score, nothing invented."""
    return (
        judgment.success
        and judgment.score >= config.label_min_score
        and not judgment.hallucinated_product_ids
        and not judgment.fabricated
    )


def grounded(judgment: Judgment) -> bool:
    """Whether every product id and tool result the trace relies on is real (DPO needs both sides so)."""
    return not judgment.hallucinated_product_ids and not judgment.fabricated
