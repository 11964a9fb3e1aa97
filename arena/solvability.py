"""Ground-truth checks: does each gold product exist and meet its own constraints, and does the basket fit?

The per-item and basket rules are ShoppingBench's scoring, as ``arena.constraints`` implements
it (exact title, inclusive prices, services, sku/attribute pairs within one variant, one shop
for a shop task, budget after the voucher). On top, a generated voucher task's gold basket must
actually unlock its voucher: it reaches the threshold and, for a shop voucher, comes from one
shop (ShoppingBench's generator draws the threshold below the basket total for that reason).
"""

from __future__ import annotations

from collections.abc import Mapping

from arena.constraints import task_failures
from arena.types import Product, Task


def task_problems(task: Task, products: Mapping[str, Product]) -> list[str]:
    """Return every reason the task's ground truth is not solvable against ``products`` (empty if it is).

    Args:
        task: the task to check.
        products: product id -> product, e.g. ``index.products(ids)``; absent ids are reported.

    Returns:
        ``<id>: not in the catalog`` for a missing product; otherwise the failed check keys of
        ``arena.constraints.task_failures`` (``<item>:<check>``, ``shop``, ``budget``), and
        ``voucher`` when the gold basket does not unlock the voucher.
    """
    missing = [
        f"{item.product_id}: not in the catalog" for item in task.gold if item.product_id not in products
    ]
    if missing:
        return missing
    basket = [products[item.product_id] for item in task.gold]
    problems = task_failures(task, basket)
    if task.voucher is not None:
        total = sum(p.price for p in basket)
        if not task.voucher.applies(total, len({p.shop_id for p in basket})):
            problems.append("voucher")
    return problems


def check_solvable(task: Task, products: Mapping[str, Product]) -> bool:
    """Return whether the task's ground truth is solvable against ``products``."""
    return not task_problems(task, products)
