"""ShoppingBench's ``find_product`` search over a ``SearchIndex``, reproduced exactly.

ShoppingBench's server takes up to 100,000 BM25 hits in relevance order, drops every hit that
fails the shop, price or service filter, stops at 50 survivors, sorts those 50 (stably) if
asked, and returns one page of 10. Here the filters run vectorised on the index's fast fields
over relevance batches, so a scan needs no document fetch; only the 50 survivors are read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from arena.index import Hit, SearchIndex, service_mask

PAGE_SIZE = 10
MAX_PAGE = 5
WINDOW = PAGE_SIZE * MAX_PAGE
SORTS = ("priceasc", "pricedesc", "order")
RESULT_FIELDS = ("product_id", "shop_id", "title", "price", "service", "sold_count")


def survivors(
    index: SearchIndex,
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
    low, high = price
    wanted = service_mask(service)
    fields = index.fields
    kept: list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]] = []
    found = 0
    for ordinals, scores in index.ranked(q):
        keep = np.ones(len(ordinals), dtype=bool)
        if shop_code is not None:
            keep &= fields.shops[ordinals] == shop_code
        if low is not None:
            keep &= fields.prices[ordinals] >= low
        if high is not None:
            keep &= fields.prices[ordinals] <= high
        if wanted:
            keep &= (fields.services[ordinals] & wanted) == wanted
        positions = np.flatnonzero(keep)[: limit - found]
        kept.append((ordinals[positions], scores[positions]))
        found += len(positions)
        if found >= limit:
            break
    if not kept:
        return []
    return index.hits_at(np.concatenate([k[0] for k in kept]), np.concatenate([k[1] for k in kept]))


def find_products(
    index: SearchIndex,
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
    return [
        {
            "product_id": hit.product_id,
            "shop_id": hit.shop_id,
            "title": hit.title,
            "price": hit.price,
            "service": list(hit.service),
            "sold_count": hit.sold_count,
        }
        for hit in hits[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    ]
