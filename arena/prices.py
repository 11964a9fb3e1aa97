"""Prices of rebuilt gold products: voucher baskets back-solved to their real total, others in range.

All amounts are integer cents, so a basket total is exact; the budget check is then done on
floats summed in item order, as ShoppingBench's ``eval_voucher`` does.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Protocol

from arena.constraints import basket_total
from arena.types import Task

MIN_PRICE_CENTS = 100


class PricedItem(Protocol):
    """A gold product being priced: its range (cents, inclusive), its price once set, its shop."""

    low: int | None
    high: int | None
    price: int | None
    shop_id: str


def voucher_total_cents(task: Task) -> int | None:
    """Back-solve a voucher task's basket total (cents) from its ``price_after_voucher``.

    Fixed vouchers: total = after + face value. Percentage vouchers: total = after / (1 - rate),
    unless that total's discount would exceed the cap; then the cap binds and total = after + cap.
    """
    voucher = task.voucher
    if voucher is None or voucher.price_after_voucher is None:
        return None
    after = voucher.price_after_voucher
    if voucher.discount_type == "fixed":
        total = after + (voucher.face_value or 0.0)
    else:
        rate, cap = voucher.discount or 0.0, voucher.cap or 0.0
        total = after / (1 - rate)
        if total * rate > cap + 1e-6:
            total = after + cap
    return round(total * 100)


def price_voucher_basket(rng: random.Random, task: Task, basket: Sequence[PricedItem]) -> bool:
    """Price a voucher task's unpriced items so the basket hits its back-solved total.

    Items priced earlier (shared with another task) keep their price. Where the total is out
    of reach within the items' ranges, the cheapest reachable basket is used instead.

    Returns:
        Whether the basket meets the task's budget (as ``eval_voucher`` computes it).
    """
    free = list({id(item): item for item in basket if item.price is None}.values())
    target = voucher_total_cents(task) or round((task.budget or 0.0) * 90)
    fixed = sum(item.price or 0 for item in basket if item.price is not None)
    floors = [max(item.low or 0, MIN_PRICE_CENTS) for item in free]
    ceilings = [item.high for item in free]
    if free and not _fits(target - fixed, floors, ceilings):
        target = fixed + sum(floors)
    prices = _split(rng, target - fixed, floors, ceilings) if free else []
    for item, cents in zip(free, prices, strict=True):
        item.price = cents
    return _nudge_to_budget(task, basket, free)


def _fits(amount: int, floors: list[int], ceilings: list[int | None]) -> bool:
    if amount < sum(floors):
        return False
    return any(c is None for c in ceilings) or amount <= sum(c or 0 for c in ceilings)


def _split(rng: random.Random, amount: int, floors: list[int], ceilings: list[int | None]) -> list[int]:
    prices = list(floors)
    extra = amount - sum(floors)
    weights = [rng.uniform(0.5, 1.5) for _ in floors]
    total_weight = sum(weights)
    for i, weight in enumerate(weights):
        share = int(extra * weight / total_weight)
        room = ceilings[i]
        prices[i] += share if room is None else min(share, room - prices[i])
    left = amount - sum(prices)
    for i in range(len(prices)):  # leftover cents go wherever there is room
        room = ceilings[i]
        give = left if room is None else min(left, room - prices[i])
        prices[i] += give
        left -= give
    return prices


def _nudge_to_budget(task: Task, basket: Sequence[PricedItem], free: list[PricedItem]) -> bool:
    # Float addition in item order can land a hair over the budget or under the threshold.
    shops = len({item.shop_id for item in basket})

    def meets() -> bool:
        total = basket_total([(item.price or 0) / 100 for item in basket])
        voucher, budget = task.voucher, task.budget
        return voucher is None or budget is None or voucher.price_after(total, shops) <= budget

    if meets():
        return True
    if not free:
        return False
    last = free[-1]
    base = last.price or 0
    for step in (-1, 1, -2, 2, -3, 3):
        cents = base + step
        if cents >= max(last.low or 0, 1) and (last.high is None or cents <= last.high):
            last.price = cents
            if meets():
                return True
    last.price = base
    return False


def price_inside(rng: random.Random, low: int | None, high: int | None) -> int:
    """Draw a plausible price (cents) inside an inclusive range, away from its bounds if possible."""
    if low is not None and high is not None:
        margin = (high - low) // 10
        cents = rng.randint(low + margin, high - margin)
    elif low is not None:
        cents = round(max(low, MIN_PRICE_CENTS) * rng.uniform(1.05, 1.8))
    elif high is not None:
        cents = max(MIN_PRICE_CENTS, round(high * rng.uniform(0.5, 0.95)))
    else:
        cents = round(50_000 * math.exp(0.9 * rng.gauss(0.0, 1.0)))
    whole = round(cents, -2)  # prefer whole pesos when they still fit
    if (low is None or whole >= low) and (high is None or whole <= high) and whole >= MIN_PRICE_CENTS:
        return whole
    return max(cents, 1)
