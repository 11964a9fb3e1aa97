"""Ground-truth checks: does each gold product exist and meet its own constraints, and does the basket fit?

The checks mirror ShoppingBench's rule scorer: a price constraint is inclusive; a requested
service must be among the product's services; every requested (key, value) pair of the sku
options and attributes must be found in the product's attributes or in *one* of its sku
variants (the same variant for all pairs). A shop task's items must all come from one shop; a
voucher task's gold basket must reach the voucher's threshold (and, for a shop voucher, come
from one shop) and cost no more than the budget after the voucher.
"""

from __future__ import annotations

from collections.abc import Mapping

from arena.types import GoldItem, Product, Task

# Allow for float rounding when comparing a basket with a budget that was rounded up from it.
BUDGET_EPSILON = 1e-6


def item_problems(item: GoldItem, product: Product) -> list[str]:
    """Return the ways ``product`` fails the constraints of gold ``item`` (empty when it meets them all)."""
    problems: list[str] = []
    if product.title not in item.titles:
        problems.append(f"{item.product_id}: title differs from the gold title")
    problems += [
        f"{item.product_id}: price {product.price} outside {p.mode} [{p.low}, {p.high}]"
        for p in item.price
        if not p.contains(product.price)
    ]
    problems += [f"{item.product_id}: lacks service {s}" for s in item.service if s not in product.service]
    wanted = {(k, v) for variant in item.sku_options for k, v in variant.items()}
    wanted |= {(k, v) for attr in item.attributes for k, values in attr.items() for v in values}
    if wanted:
        attrs = {(k, v) for k, values in product.attributes.items() for v in values}
        variants = [set(variant.items()) for variant in product.sku_options.values()] or [set()]
        if not any(wanted <= attrs | variant for variant in variants):
            best = max(variants, key=lambda variant: len(wanted & (attrs | variant)))
            missing = sorted(wanted - (attrs | best))
            problems.append(f"{item.product_id}: no variant has {missing}")
    return problems


def task_problems(task: Task, products: Mapping[str, Product]) -> list[str]:
    """Return every reason the task's ground truth is not solvable against ``products`` (empty if it is).

    Args:
        task: the task to check.
        products: product id -> product, e.g. ``index.products(ids)``; absent ids are reported.
    """
    problems: list[str] = []
    basket: list[Product] = []
    for item in task.gold:
        product = products.get(item.product_id)
        if product is None:
            problems.append(f"{item.product_id}: not in the catalog")
            continue
        basket.append(product)
        problems += item_problems(item, product)
    if problems:
        return problems
    shops = {p.shop_id for p in basket}
    if task.intent == "shop" and len(shops) != 1:
        problems.append(f"shop task spans {len(shops)} shops")
    if task.voucher is not None and task.budget is not None:
        total = sum(p.price for p in basket)
        if not task.voucher.applies(total, len(shops)):
            problems.append(
                f"voucher does not apply to the gold basket (total {total:.2f}, {len(shops)} shops)"
            )
        after = task.voucher.price_after(total, len(shops))
        if after > task.budget + BUDGET_EPSILON:
            problems.append(f"gold basket costs {after:.2f} after the voucher, over the budget {task.budget}")
    return problems


def check_solvable(task: Task, products: Mapping[str, Product]) -> bool:
    """Return whether the task's ground truth is solvable against ``products``."""
    return not task_problems(task, products)
