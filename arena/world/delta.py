"""Compiling a world's delta and its shop vouchers from the part random sources (``arena.world.seed``).

Every draw goes through the given ``random.Random`` over sorted or ordinal-ordered inputs, so the
same seed and base give the same delta everywhere. One sample of distinct base ordinals is split
into delistings, price moves, stock levels and the sources of new listings, so no product gets
two kinds of change.
"""

from __future__ import annotations

import datetime as dt
import random

from arena.index import SearchIndex
from arena.tools.tool import MAX_ID_CHARS
from arena.types import SERVICES, Product
from arena.world.types import NewListing, PriceMove, ShopVoucher, StockLevel, WorldDelta, WorldSpec

_THRESHOLDS = (30, 50, 80, 100, 150, 200, 300)


def _money(value: float) -> float:
    return max(0.01, round(value, 2))


def _stock(rng: random.Random, spec: WorldSpec) -> int:
    return 0 if rng.random() < spec.stockout_share else rng.randint(1, 100)


def compile_delta(base: SearchIndex, rng: random.Random, spec: WorldSpec, *, tag: str) -> WorldDelta:
    """Draw a world's delta over ``base``; ``tag`` (from the world seed) makes new listing ids unique."""
    wanted = spec.delistings + spec.price_moves + spec.stock_levels + spec.new_listings
    ordinals = rng.sample(range(len(base)), min(wanted, len(base)))
    ids = [base.product_id_at(o) for o in ordinals]
    products = base.products(ids)
    cuts = (
        spec.delistings,
        spec.delistings + spec.price_moves,
        spec.delistings + spec.price_moves + spec.stock_levels,
    )
    delisted, moved, stocked, sources = (
        ids[: cuts[0]],
        ids[cuts[0] : cuts[1]],
        ids[cuts[1] : cuts[2]],
        ids[cuts[2] :],
    )
    moves = []
    for product_id in moved:
        old = products[product_id].price
        step = rng.uniform(0.05, spec.max_price_move) * rng.choice((-1, 1))
        moves.append(PriceMove(product_id=product_id, old_price=old, new_price=_money(old * (1 + step))))
    stock = [StockLevel(product_id=i, stock=_stock(rng, spec)) for i in stocked]
    shops = [products[i].shop_id for i in ids]
    listings = []
    for number, source_id in enumerate(sources):
        listing = _new_listing(products[source_id], rng, shops, f"{tag}n{number}")
        if listing is not None:
            listings.append(listing)
            stock.append(StockLevel(product_id=listing.product.product_id, stock=_stock(rng, spec)))
    clashing = base.ordinals_of([n.product.product_id for n in listings])
    listings = [n for n in listings if n.product.product_id not in clashing]
    kept = {n.product.product_id for n in listings} | set(stocked)
    return WorldDelta(
        price_moves=tuple(sorted(moves, key=lambda m: m.product_id)),
        stock=tuple(sorted((s for s in stock if s.product_id in kept), key=lambda s: s.product_id)),
        new_listings=tuple(sorted(listings, key=lambda n: n.product.product_id)),
        delisted=tuple(sorted(delisted)),
    )


def _new_listing(source: Product, rng: random.Random, shops: list[str], suffix: str) -> NewListing | None:
    """Another offer of ``source``: same title and specifics, its own id, price, services, maybe shop."""
    product_id = f"{source.product_id}-{suffix}"
    if len(product_id) > MAX_ID_CHARS:
        return None
    shop_id = source.shop_id if rng.random() < 0.5 else rng.choice(shops)
    services = tuple(s for s in SERVICES if rng.random() < 0.5)
    product = source.model_copy(
        update={
            "product_id": product_id,
            "shop_id": shop_id,
            "price": _money(source.price * rng.uniform(0.75, 1.15)),
            "sold_count": rng.randint(0, source.sold_count // 2),
            "service": services,
        }
    )
    return NewListing(derived_from=source.product_id, product=Product.model_validate(product.model_dump()))


def compile_vouchers(base: SearchIndex, rng: random.Random, spec: WorldSpec) -> list[ShopVoucher]:
    """Draw shop vouchers for shops with at least two products; some expired or not yet valid."""
    shops = base.shops_with_at_least(2)
    chosen = sorted(rng.sample(shops, min(spec.vouchers, len(shops))))
    vouchers = []
    for number, shop_id in enumerate(chosen):
        threshold = float(rng.choice(_THRESHOLDS))
        start = spec.as_of + dt.timedelta(days=rng.randint(-14, 3))
        end = spec.as_of + dt.timedelta(days=rng.randint(-3, 21))
        end = max(end, start)
        common = {"voucher_id": f"sv-{number:03d}-{shop_id}", "shop_id": shop_id, "threshold": threshold}
        if rng.random() < 0.5:
            amount = float(rng.randint(max(1, int(threshold * 0.05)), max(1, int(threshold * 0.3))))
            voucher = ShopVoucher(
                **common, discount="amount", amount=amount, valid_from=start, valid_until=end
            )
        else:
            percent = rng.randint(5, 40)
            cap = float(max(1, round(threshold * percent / 100 * rng.uniform(1.0, 3.0))))
            voucher = ShopVoucher(
                **common, discount="percent", percent=percent, cap=cap, valid_from=start, valid_until=end
            )
        vouchers.append(voucher)
    return vouchers
