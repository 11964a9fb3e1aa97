"""Checks of a product against a gold item's constraints and of a basket against a voucher budget.

These follow ShoppingBench's scoring (src/agent/rewards/orm.py ``rule_score_reward`` and
src/agent/run_evaluate.py ``eval_shop``/``eval_voucher``), minus the title embedding:

- each price constraint is checked with its mode, bounds inclusive;
- each requested service must be in the product's services;
- sku and attribute pairs are flattened: the product's attributes give a set of
  ``(key, value)`` pairs, each variant gives another; a requested pair counts as present when
  it is in the attribute pairs or in the pairs of the one variant that matches most pairs
  (the "no variant" choice included);
- a shop basket is one shop; a voucher basket's total (summed in item order) meets the
  budget after the voucher (`Voucher.price_after`, which is ``eval_voucher``'s rule).

The catalog builder and its tests use these to prove what they built.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from arena.types import GoldItem, Product, Task

TitleMatch = Callable[[str, Sequence[str]], bool]


def exact_title(title: str, references: Sequence[str]) -> bool:
    """Return whether ``title`` equals one of the reference titles."""
    return title in references


def title_words(title: str) -> set[str]:
    """Return the lower-cased whitespace-separated words of a title."""
    return set(title.lower().split())


def similar_title(title: str, references: Sequence[str]) -> bool:
    """Return whether ``title`` contains every word of one reference title (a cheap similarity)."""
    words = title_words(title)
    return any(title_words(ref) <= words for ref in references)


def requested_pairs(item: GoldItem) -> list[tuple[str, str]]:
    """Return the requested (key, value) pairs of an item: sku options first, then attributes."""
    pairs = [(k, v) for option in item.sku_options for k, v in option.items()]
    pairs += [(k, v) for attr in item.attributes for k, values in attr.items() for v in values]
    return pairs


def missing_pairs(product: Product, pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """Return the requested pairs the product lacks under ShoppingBench's flattening rule."""
    if not pairs:
        return []
    attr_pairs = {(k, v) for k, values in product.attributes.items() for v in values}
    best: list[tuple[str, str]] | None = None
    for variant in [{}, *product.sku_options.values()]:
        variant_pairs = set(variant.items())
        missing = [p for p in pairs if p not in attr_pairs and p not in variant_pairs]
        if best is None or len(missing) < len(best):
            best = missing
    return best or []


def unmet_constraints(
    product: Product, item: GoldItem, *, title_match: TitleMatch = exact_title
) -> list[str]:
    """Return the constraints of ``item`` that ``product`` fails, as check keys.

    Keys: ``title``, ``price:<i>`` (the i-th price constraint), ``service:<name>``,
    ``pair:<key>=<value>`` (a sku or attribute pair).
    """
    failed: list[str] = []
    if not title_match(product.title, item.titles):
        failed.append("title")
    failed += [f"price:{i}" for i, c in enumerate(item.price) if not c.contains(product.price)]
    failed += [f"service:{s}" for s in item.service if s not in product.service]
    missing = missing_pairs(product, requested_pairs(item))
    failed += sorted({f"pair:{k}={v}" for k, v in missing})
    return failed


def basket_total(prices: Sequence[float]) -> float:
    """Sum prices in order, as ``eval_voucher`` does (float addition from 0)."""
    total = 0.0
    for price in prices:
        total += price
    return total


def basket_meets_budget(task: Task, basket: Sequence[Product]) -> bool:
    """Return whether a voucher task's basket meets its budget after the voucher."""
    if task.voucher is None or task.budget is None:
        return True
    total = basket_total([p.price for p in basket])
    shops = len({p.shop_id for p in basket})
    return task.voucher.price_after(total, shops) <= task.budget


def task_failures(
    task: Task, basket: Sequence[Product], *, title_match: TitleMatch = exact_title
) -> list[str]:
    """Check a whole basket (one product per gold item, in order) against a task.

    Returns:
        A flat list of failed check keys: per item ``<index>:<key>`` (see `unmet_constraints`),
        plus ``shop`` for a shop task spread over several shops and ``budget`` for a voucher
        task over budget. Empty means every constraint is met.
    """
    failed: list[str] = []
    for index, (item, product) in enumerate(zip(task.gold, basket, strict=True)):
        failed += [f"{index}:{key}" for key in unmet_constraints(product, item, title_match=title_match)]
    if task.intent == "shop" and len({p.shop_id for p in basket}) != 1:
        failed.append("shop")
    if task.intent == "voucher" and not basket_meets_budget(task, basket):
        failed.append("budget")
    return failed
