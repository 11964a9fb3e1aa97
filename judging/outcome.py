"""The outcome check: ShoppingBench's rule-based scoring of the final answer, production-strict.

Per gold item (aligned with the answer's ids by position) the recommended product is held
against each constraint: every reference title (similarity >= threshold), every price range,
every service, and every sku/attribute pair (best over the product's variants, with the
product's attributes available to every variant, as ShoppingBench flattens them). An exact id
match (`gt`) short-circuits the item to full marks. Per task: ``rule`` is the mean item score,
``gt`` the share of exact ids, ``product`` the share of positions whose id exists, ``shop`` (shop
intent) 1 when every position is filled from one shop, ``budget`` (voucher intent) 1 when the
basket total, with the voucher applied where its rules allow, is within budget. Knowledge tasks
use ShoppingBench's web rule. ``docs/judging.md`` lists every value and each deviation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from arena.types import GoldItem, Product, Task
from judging.answer import answer_tools
from judging.context import JudgingContext, ProductLookup
from judging.titles import TitleMatcher
from judging.types import Check, OutcomeEvidence, OutcomeItem, OutcomeScores

__all__ = ["ProductLookup", "check_outcome", "score_item", "score_outcome"]

FIELDS = ("title", "price", "service", "sku_attrs")
# Budget sums are compared with this slack so that float noise in a sum of prices with cents
# (0.1 + 0.2) never flips a verdict; it is far below any real price step.
BUDGET_EPSILON = 1e-6
_FULL = 1.0 - 1e-9


@dataclass(frozen=True)
class ItemScore:
    """One gold item against the product recommended at its position."""

    gt: bool
    rule: float
    fields: dict[str, float]
    failed: tuple[str, ...] = ()


def _sku_attr_pairs(item: GoldItem) -> list[tuple[str, str]]:
    pairs = [(k, v) for option in item.sku_options for k, v in option.items()]
    pairs += [(k, v) for attr in item.attributes for k, values in attr.items() for v in values]
    return pairs


def _best_variant_misses(product: Product, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Return the pairs the best variant misses (ShoppingBench: an empty variant plus each sku)."""
    attrs = {(k, v) for k, values in product.attributes.items() for v in values}
    variants: list[set[tuple[str, str]]] = [set()]
    variants += [set(option.items()) for option in product.sku_options.values()]
    best: list[tuple[str, str]] | None = None
    for variant in variants:
        misses = [p for p in pairs if p not in variant and p not in attrs]
        if best is None or len(misses) < len(best):
            best = misses
    return best or []


def score_item(product: Product, item: GoldItem, *, matcher: TitleMatcher, threshold: float) -> ItemScore:
    """Score one recommended product against one gold item (ShoppingBench's ``rule_score_reward``)."""
    if product.product_id == item.product_id:
        return ItemScore(gt=True, rule=1.0, fields=dict.fromkeys(FIELDS, 1.0))
    hits: dict[str, int] = dict.fromkeys(FIELDS, 0)
    totals: dict[str, int] = dict.fromkeys(FIELDS, 0)
    failed: list[str] = []
    for i, title in enumerate(item.titles):
        totals["title"] += 1
        if matcher.similarity(product.title, title) >= threshold:
            hits["title"] += 1
        else:
            failed.append(f"title[{i}]")
    for i, price in enumerate(item.price):
        totals["price"] += 1
        if price.contains(product.price):
            hits["price"] += 1
        else:
            failed.append(f"price[{i}]")
    for service in item.service:
        totals["service"] += 1
        if service in product.service:
            hits["service"] += 1
        else:
            failed.append(f"service:{service}")
    pairs = _sku_attr_pairs(item)
    misses = _best_variant_misses(product, pairs)
    totals["sku_attrs"] = len(pairs)
    hits["sku_attrs"] = len(pairs) - len(misses)
    failed += [f"sku_attrs:{k}={v}" for k, v in misses]
    total = sum(totals.values())
    rule = sum(hits.values()) / total if total else 1.0
    fields = {f: hits[f] / totals[f] if totals[f] else 1.0 for f in FIELDS}
    return ItemScore(gt=False, rule=rule, fields=fields, failed=tuple(failed))


def _score_knowledge(
    task: Task, ids: Sequence[str], found: Mapping[str, Product], *, matcher: TitleMatcher, threshold: float
) -> OutcomeEvidence:
    """ShoppingBench's web rule: key attribute in title or description, and title similarity."""
    gold = task.gold[0]
    product = found.get(ids[0]) if ids else None
    kw: float | None
    if product is None:
        kw, title, gt = 0.0, 0.0, False
    elif product.product_id == gold.product_id:
        kw, title, gt = 1.0, 1.0, True
    else:
        gt = False
        keyword = (task.knowledge_attribute or "").lower()
        text = f"{product.title}\n{product.description}".lower()
        kw = (1.0 if keyword in text else 0.0) if keyword else None
        best = max(matcher.similarity(product.title, t) for t in gold.titles)
        title = 1.0 if best >= threshold else 0.0
    parts = [x for x in (kw, title) if x is not None]
    rule = sum(parts) / len(parts)
    failed = [name for name, v in (("kw", kw), ("title[0]", title)) if v == 0.0 and product is not None]
    scores = OutcomeScores(
        rule=rule,
        gt=1.0 if gt else 0.0,
        product=1.0 if product is not None else 0.0,
        fields={"kw": 1.0 if kw is None else kw, "title": title},
    )
    item = OutcomeItem(
        position=0,
        product_id=ids[0] if ids else None,
        found=product is not None,
        gt=gt,
        rule=rule,
        failed=tuple(failed) if product is not None else ("missing",),
    )
    return OutcomeEvidence(success=rule >= _FULL, partial=rule, items=(item,), scores=scores)


def score_outcome(
    task: Task,
    ids: Sequence[str],
    found: Mapping[str, Product],
    *,
    matcher: TitleMatcher,
    title_threshold: float,
    knowledge_title_threshold: float,
    out_of_stock: frozenset[str] = frozenset(),
) -> OutcomeEvidence:
    """Score an answer's ids against the task's gold items.

    Args:
        task: The task judged.
        ids: The answer's product ids (already trimmed and de-duplicated), in the user's order.
        found: The catalog products for those ids (unknown ids absent).
        matcher: The title matcher.
        title_threshold: Title hit threshold for product, shop and voucher tasks.
        knowledge_title_threshold: Title hit threshold for knowledge tasks.
        out_of_stock: The answer's ids out of stock in the world at the answer: their positions
            fail as a whole (``out_of_stock_at_answer``), exact id or not, and leave the basket.

    Returns:
        The outcome check's evidence: the success verdict, the partial credit, the components
        (``scores``) and each gold item's position.
    """
    if task.intent == "knowledge":
        return _score_knowledge(task, ids, found, matcher=matcher, threshold=knowledge_title_threshold)
    n = len(task.gold)
    sums = {"rule": 0.0, "gt": 0.0, "product": 0.0} | dict.fromkeys(FIELDS, 0.0)
    items: list[OutcomeItem] = []
    basket: list[Product] = []
    for position, gold in enumerate(task.gold):
        pid = ids[position] if position < len(ids) else None
        product = found.get(pid) if pid is not None else None
        if product is None:
            items.append(OutcomeItem(position=position, product_id=pid, found=False, failed=("missing",)))
            continue
        sums["product"] += 1
        if pid in out_of_stock:
            items.append(
                OutcomeItem(
                    position=position,
                    product_id=pid,
                    found=True,
                    gt=False,
                    rule=0.0,
                    reason="out_of_stock_at_answer",
                )
            )
            continue
        item = score_item(product, gold, matcher=matcher, threshold=title_threshold)
        basket.append(product)
        sums["gt"] += 1.0 if item.gt else 0.0
        sums["rule"] += item.rule
        for f in FIELDS:
            sums[f] += item.fields[f]
        items.append(
            OutcomeItem(
                position=position, product_id=pid, found=True, gt=item.gt, rule=item.rule, failed=item.failed
            )
        )
    complete = len(basket) == n  # an out-of-stock pick leaves the basket short
    shops = {p.shop_id for p in basket}
    shop = (1.0 if complete and len(shops) == 1 else 0.0) if task.intent == "shop" else None
    budget = _budget(task, basket, shop_count=len(shops)) if task.intent == "voucher" and complete else None
    if task.intent == "voucher" and budget is None:
        budget = 0.0
    scores = OutcomeScores(
        rule=sums["rule"] / n,
        gt=sums["gt"] / n,
        product=sums["product"] / n,
        shop=shop,
        budget=budget,
        fields={f: sums[f] / n for f in FIELDS},
    )
    gate = shop if shop is not None else budget
    success = scores.rule >= _FULL and (gate is None or gate >= _FULL)
    partial = scores.rule if gate is None else (scores.rule + gate) / 2
    return OutcomeEvidence(success=success, partial=partial, items=tuple(items), scores=scores)


def _budget(task: Task, basket: Sequence[Product], *, shop_count: int) -> float:
    """Return 1 when the basket fits the budget, before or (where it applies) after the voucher."""
    if task.budget is None or task.voucher is None:
        return 0.0
    total = sum(p.price for p in basket)
    after = task.voucher.price_after(total, shop_count)
    return 1.0 if min(total, after) <= task.budget + BUDGET_EPSILON else 0.0


def check_outcome(ctx: JudgingContext) -> Check:
    """The ``outcome`` check: the answer scored against the task, valued ``w * success + (1 - w) * partial``.

    Against ``ctx.truth`` where it is set (a world that changed during the episode, as it was
    at the moment of the answer), and with ``ctx.stock`` there: a pick out of stock fails.

    ``w`` is ``JudgeConfig.success_weight``; the ``OutcomeEvidence`` carries the components.
    """
    config, answer = ctx.config, ctx.answer
    result = score_outcome(
        ctx.task if ctx.truth is None else ctx.truth,
        answer.product_ids,
        ctx.found,
        matcher=config.title_matcher,
        title_threshold=config.title_threshold,
        knowledge_title_threshold=config.knowledge_title_threshold,
        out_of_stock=ctx.out_of_stock,
    )
    value = config.success_weight * result.success + (1 - config.success_weight) * result.partial
    return Check(
        name="outcome",
        value=value,
        explanation=_explain(result, answered=answer.call is not None and not answer.error),
        evidence=result,
    )


def _explain(result: OutcomeEvidence, *, answered: bool) -> str:
    s = result.scores or OutcomeScores(rule=0.0, gt=0.0, product=0.0)
    if not answered:
        return f"no readable {answer_tools()} answer"
    if result.success:
        return f"success: every constraint met (rule={s.rule:.3f}, gt={s.gt:.3f})"
    broken = sorted(
        {f for item in result.items for f in item.failed}
        | {item.reason for item in result.items if item.reason is not None}
    )
    explanation = (
        f"not every constraint met (rule={s.rule:.3f}); broken: {', '.join(broken) or 'shop/budget'}"
    )
    if s.shop == 0.0:
        explanation += "; not one shop"
    if s.budget == 0.0:
        explanation += "; over budget"
    return explanation
