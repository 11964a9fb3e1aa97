"""Sampling the ground truth of generated tasks: which fields of a product to keep, price bounds, vouchers.

ShoppingBench's method (``src/agent/run_synthesize.py`` of yjwjy/ShoppingBench), restated:

- a gold item always keeps the product's title; each other field is kept with probability
  ``keep`` (1/2): one whole sku variant (chosen uniformly), each attribute key with one of its
  values, each service, and one price constraint (mode uniform over less than / greater than /
  between) whose integer bounds are widened away from the price by up to the price itself,
  strictly, so the gold price lies inside;
- a voucher is synthesised from the basket total: threshold uniform in [10%, 90%] of the total;
  fixed (face value uniform in [10%, 50%] of the threshold) or percentage (10..50%, cap uniform
  between threshold x rate and the threshold, strictly above the former); the budget is the
  price after the voucher rounded up plus up to 10% slack.
"""

from __future__ import annotations

import math
import random
from typing import Literal

from arena.types import GoldItem, PriceConstraint, Product, Service, Voucher

PRICE_MODES: tuple[Literal["less than", "greater than", "between"], ...] = (
    "less than",
    "greater than",
    "between",
)


def sample_price(price: float, rng: random.Random) -> PriceConstraint:
    """Draw a price constraint the price satisfies strictly inside, widened by up to the price itself."""
    mode = rng.choice(PRICE_MODES)
    whole = int(price)
    low = max(0, whole - rng.randint(1, max(1, whole)))
    high = whole + rng.randint(1, max(1, whole))
    if mode == "less than":
        return PriceConstraint(mode=mode, high=float(high))
    if mode == "greater than":
        return PriceConstraint(mode=mode, low=float(low))
    return PriceConstraint(mode=mode, low=float(low), high=float(high))


def sample_item(
    product: Product, rng: random.Random, *, keep: float = 0.5, with_price: bool = True
) -> GoldItem:
    """Draw a gold item for ``product``: its title, and each other field kept with probability ``keep``.

    Args:
        product: the gold product.
        rng: the generator's random source (the only one, so a seed fixes the item).
        keep: probability of keeping each field (ShoppingBench uses 1/2).
        with_price: whether a price constraint may be drawn (voucher tasks have none; the budget rules).
    """
    sku: tuple[dict[str, str], ...] = ()
    variants = [product.sku_options[k] for k in sorted(product.sku_options) if product.sku_options[k]]
    if variants and rng.random() < keep:
        sku = (dict(rng.choice(variants)),)
    attributes: list[dict[str, tuple[str, ...]]] = []
    for key in sorted(product.attributes):
        values = [v for v in product.attributes[key] if v.strip()]
        if key.strip() and values and rng.random() < keep:
            attributes.append({key: (rng.choice(values),)})
    services: tuple[Service, ...] = tuple(s for s in product.service if rng.random() < keep)
    prices: tuple[PriceConstraint, ...] = ()
    if with_price and product.price > 0 and rng.random() < keep:
        prices = (sample_price(product.price, rng),)
    return GoldItem(
        product_id=product.product_id,
        titles=(product.title,),
        price=prices,
        service=services,
        sku_options=sku,
        attributes=tuple(attributes),
    )


def sample_voucher(
    total: float, shop_count: int, voucher_type: Literal["platform", "shop"], rng: random.Random
) -> tuple[Voucher, float] | None:
    """Draw a voucher and a budget for a basket; ``None`` when the draw is degenerate (caller redraws).

    Args:
        total: the gold basket's total price.
        shop_count: how many shops the basket spans (a shop voucher needs 1).
        voucher_type: platform (any products) or shop (products of one shop).
        rng: the generator's random source.

    Returns:
        The voucher (with ``price_after_voucher`` filled in) and the budget.
    """
    threshold = rng.randint(int(total * 0.1), int(total * 0.9))
    if threshold <= 0 or threshold > total:
        return None
    if rng.random() < 0.5:
        face_value = rng.randint(int(threshold * 0.1), int(threshold * 0.5))
        if face_value <= 0:
            return None
        voucher = Voucher(
            voucher_type=voucher_type,
            threshold=threshold,
            discount_type="fixed",
            face_value=float(face_value),
        )
    else:
        percent = rng.randint(10, 50)
        cap = rng.randint(int(threshold * percent / 100), threshold)
        if cap <= threshold * percent / 100:
            return None
        voucher = Voucher(
            voucher_type=voucher_type,
            threshold=threshold,
            discount_type="percentage",
            discount=percent / 100,
            cap=float(cap),
        )
    after = voucher.price_after(total, shop_count)
    if after <= 0:
        return None
    budget = math.ceil(after) + rng.randint(0, math.ceil(after * 0.1))
    return voucher.model_copy(update={"price_after_voucher": round(after, 2)}), float(budget)
