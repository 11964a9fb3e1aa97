"""The judging context: facts computed once and shared by the checks, and usable outside the judge."""

from __future__ import annotations

from collections.abc import Sequence

from arena.types import Product
from judging.axis import classify_steps
from judging.context import JudgingContext
from judging.grounding import check_grounding
from judging.judge import RULE_CHECKS
from tests.judging.factory import catalog, context, good_shop_episode, shop_task


def test_facts_are_computed_once_and_shared() -> None:
    asked: list[list[str]] = []
    products = catalog()

    def lookup(ids: Sequence[str]) -> dict[str, Product]:
        asked.append(list(ids))
        return {i: products[i] for i in ids if i in products}

    ep = good_shop_episode()
    ctx = JudgingContext(task=shop_task(), trajectory=ep.trajectory(), log=ep.log, products=lookup)
    checks = [check(ctx) for check in RULE_CHECKS]
    assert [c.name for c in checks] == ["outcome", "format", "grounding", "process", "axis"]
    assert ctx.answer is ctx.answer and ctx.found is ctx.found and ctx.reconciliation is ctx.reconciliation
    assert asked.count(["1001", "1002"]) == 1  # the answer's products: one lookup serves every check


def test_the_log_facts_and_the_step_classifier_serve_curation() -> None:
    # What a curation stage re-judging a converted trace needs, without running the judge.
    ep = good_shop_episode()
    ctx: JudgingContext = context(ep.trajectory(), ep.log)
    assert {"1001", "1002", "1003"} <= ctx.logged.product_ids
    assert ctx.logged.prices["1002"] == 1800.0
    assert any("Pegasus" in title for title in ctx.logged.titles)
    assert [step.kind for step in classify_steps(ctx.trajectory)] == ["driven"] * 3
    assert check_grounding(ctx).value == 1.0
