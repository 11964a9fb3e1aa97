"""ShoppingBench's ``find_product`` search over a ``SearchIndex``, reproduced exactly.

ShoppingBench's server takes up to 100,000 BM25 hits in relevance order, drops every hit that
fails the shop, price or service filter, stops at 50 survivors, sorts those 50 (stably) if
asked, and returns one page of 10. Here the filters run vectorised over all matches on the
index's fast fields and only the passing hits that can reach the window are ordered, which
gives the same 50 survivors without a scan; only those 50 are read from the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from arena import bm25
from arena.index import Hit, ProductIndex, service_mask

PAGE_SIZE = 10
MAX_PAGE = 5
WINDOW = PAGE_SIZE * MAX_PAGE
SORTS = ("priceasc", "pricedesc", "order")
RESULT_FIELDS = ("product_id", "shop_id", "title", "price", "service", "sold_count")


def survivors(
    index: ProductIndex,
    q: str,
    *,
    shop_id: str | None = None,
    price: tuple[float | None, float | None] = (None, None),
    service: Sequence[str] = (),
    limit: int = WINDOW,
) -> list[Hit]:
    """The first ``limit`` hits, in relevance order, that pass every filter.

    Args:
        index: the search index.
        q: the query (any string).
        shop_id: keep only this shop's products (None or empty: any shop).
        price: inclusive (low, high) bounds; either side None means unbounded.
        service: keep only products offering every one of these services.
        limit: how many survivors to collect.
    """
    shop_code = None
    if shop_id:
        shop_code = index.shop_code(shop_id)
        if shop_code is None:
            return []
    ordinals, scores = index.match(q)
    if not len(ordinals):
        return []
    keep = _passing(index, ordinals, shop_code, price, service_mask(service))
    passing = np.flatnonzero(keep) if keep is not None else None
    candidates = passing if passing is not None else np.arange(len(ordinals))
    if len(candidates) > 4 * limit:  # order only the passing hits that can reach the window
        if passing is None:
            candidates = bm25.top_candidates(scores, limit)
        else:
            candidates = passing[bm25.top_candidates(scores[passing], limit)]
    keys = index.rank_keys(ordinals[candidates], scores[candidates])
    chosen = candidates[np.argsort(keys)[:limit]]
    if len(ordinals) > bm25.MAX_HITS and len(chosen):
        # ShoppingBench filters only the first MAX_HITS hits. The last survivor is surely among
        # them when fewer hits than that score anywhere near it; otherwise rank all, cut, filter.
        near = np.count_nonzero(scores >= scores[chosen[-1]] - bm25.ROUNDING_MARGIN)
        if near >= bm25.MAX_HITS:
            all_keys = index.rank_keys(ordinals, scores)
            cutoff = np.partition(all_keys, bm25.MAX_HITS - 1)[bm25.MAX_HITS - 1]
            passing = np.flatnonzero(all_keys <= cutoff if keep is None else (all_keys <= cutoff) & keep)
            chosen = passing[bm25.top_order(all_keys[passing], 0, limit)]
    return index.hits_at(ordinals[chosen], scores[chosen])


def _passing(
    index: ProductIndex,
    ordinals: npt.NDArray[np.uint32],
    shop_code: int | None,
    price: tuple[float | None, float | None],
    services: int,
) -> npt.NDArray[np.bool_] | None:
    """Which matches pass the shop, price and service filters (None: no filter is set)."""
    low, high = price
    if shop_code is None and low is None and high is None and not services:
        return None
    keep = np.ones(len(ordinals), dtype=bool)
    if shop_code is not None:
        keep &= index.field_values("shops", ordinals) == shop_code
    if low is not None:
        keep &= index.field_values("prices", ordinals) >= low
    if high is not None:
        keep &= index.field_values("prices", ordinals) <= high
    if services:
        keep &= (index.field_values("services", ordinals) & services) == services
    return keep


def find_products(
    index: ProductIndex,
    *,
    q: str,
    page: int,
    shop_id: str | None = None,
    price: tuple[float | None, float | None] = (None, None),
    sort: str | None = None,
    service: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """One page of ``find_product`` results with ShoppingBench's exact semantics.

    Hits are scanned in relevance order and filtered until 50 survive; ``sort`` (``priceasc``,
    ``pricedesc``, or ``order`` for sold count descending; anything else keeps relevance)
    reorders only those 50, stably, so ties keep relevance order; page ``p`` is survivors
    ``10(p-1)..10p-1``. A page outside 1..5 or past the survivors is empty.

    Returns:
        ``{product_id, shop_id, title, price, service, sold_count}`` per product.
    """
    if not 1 <= page <= MAX_PAGE:
        return []
    hits = survivors(index, q, shop_id=shop_id, price=price, service=service)
    if sort == "order":
        hits.sort(key=lambda hit: hit.sold_count, reverse=True)
    elif sort == "priceasc":
        hits.sort(key=lambda hit: hit.price)
    elif sort == "pricedesc":
        hits.sort(key=lambda hit: hit.price, reverse=True)
    return [_row(hit) for hit in hits[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]]


def _row(hit: Hit) -> dict[str, Any]:
    row: dict[str, Any] = {
        "product_id": hit.product_id,
        "shop_id": hit.shop_id,
        "title": hit.title,
        "price": hit.price,
        "service": list(hit.service),
        "sold_count": hit.sold_count,
    }
    if hit.stock is not None:  # only a world declares stock; the catalog's rows stay ShoppingBench's
        row["stock"] = hit.stock
    return row
