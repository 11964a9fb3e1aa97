import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arena import bm25
from arena.index import SearchIndex, build_index, open_index
from arena.search import find_products

# A generated world: 120 "widget" products whose relevance for the query "widget" is known by
# construction (one occurrence each, so BM25 falls with document length: length 1 + i % 5),
# ties broken by product id as Anserini does; 600 "gadget" decoys keep widget's idf high.
N_WIDGETS = 120
SERVICE_NAMES = ("official", "freeShipping", "COD", "flashsale")


def widget(i: int) -> dict[str, Any]:
    services = [
        name
        for name, on in zip(
            SERVICE_NAMES, (i % 2 == 0, i % 3 == 0, (i // 5) % 2 == 0, i % 7 == 0), strict=True
        )
        if on
    ]
    return {
        "product_id": f"w{(i * 37) % N_WIDGETS:03d}",  # id order differs from construction order
        "shop_id": "deep" if i % 5 == 4 and i >= 100 else f"shop{i % 3}",
        "title": " ".join(["Widget", *(f"filler{i}x{j}" for j in range(i % 5))]),
        "price": float(100 - (i * 37) % 100),
        "sold_count": (i * 13) % 17,
        "service": services,
    }


def decoy(j: int) -> dict[str, Any]:
    return {
        "product_id": f"g{j:04d}",
        "shop_id": "decoys",
        "title": f"Gadget {j}",
        "price": 5.0,
        "sold_count": 1,
    }


WIDGETS = [widget(i) for i in range(N_WIDGETS)]


def doc_length(product: dict[str, Any]) -> int:
    return len(product["title"].split())


RELEVANCE = sorted(WIDGETS, key=lambda p: (doc_length(p), p["product_id"]))


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SearchIndex]:
    root = tmp_path_factory.mktemp("search")
    catalog = root / "catalog.jsonl"
    rows = [decoy(j) for j in range(300)] + WIDGETS + [decoy(j) for j in range(300, 600)]
    catalog.write_text("".join(json.dumps(row) + "\n" for row in rows))
    build_index([catalog], root / "index")
    with open_index(root / "index") as opened:
        yield opened


def summary(product: dict[str, Any]) -> dict[str, Any]:
    return {
        "product_id": product["product_id"],
        "shop_id": product["shop_id"],
        "title": product["title"],
        "price": product["price"],
        "service": product["service"],
        "sold_count": product["sold_count"],
    }


def expected(
    *,
    page: int = 1,
    shop: str | None = None,
    low: float | None = None,
    high: float | None = None,
    services: tuple[str, ...] = (),
    sort: str | None = None,
    ranked: list[dict[str, Any]] = RELEVANCE,
) -> list[dict[str, Any]]:
    """ShoppingBench's search loop written out plainly over the known relevance order."""
    window = [
        p
        for p in ranked
        if (not shop or p["shop_id"] == shop)
        and (low is None or p["price"] >= low)
        and (high is None or p["price"] <= high)
        and all(s in p["service"] for s in services)
    ][:50]
    if sort == "order":
        window = sorted(window, key=lambda p: p["sold_count"], reverse=True)
    elif sort == "priceasc":
        window = sorted(window, key=lambda p: p["price"])
    elif sort == "pricedesc":
        window = sorted(window, key=lambda p: p["price"], reverse=True)
    return [summary(p) for p in window[(page - 1) * 10 : page * 10]]


def all_pages(index: SearchIndex, **kwargs: Any) -> list[dict[str, Any]]:
    return [row for page in range(1, 6) for row in find_products(index, q="widget", page=page, **kwargs)]


def test_relevance_order_is_length_then_product_id(index: SearchIndex) -> None:
    ids = [hit.product_id for hit in index.hits("widget")]
    assert ids == [p["product_id"] for p in RELEVANCE]


@pytest.mark.parametrize("page", [1, 2, 3, 4, 5])
def test_pages_slice_the_first_50_hits(index: SearchIndex, page: int) -> None:
    assert find_products(index, q="widget", page=page) == expected(page=page)
    assert len(find_products(index, q="widget", page=page)) == 10


@pytest.mark.parametrize("page", [0, 6, -1])
def test_pages_outside_1_to_5_are_empty(index: SearchIndex, page: int) -> None:
    assert find_products(index, q="widget", page=page) == []


def test_page_past_the_survivors_is_empty(index: SearchIndex) -> None:
    rows = find_products(index, q="widget", page=1, shop_id="deep")
    assert 0 < len(rows) < 10
    assert find_products(index, q="widget", page=2, shop_id="deep") == []


@pytest.mark.parametrize("sort", [None, "priceasc", "pricedesc", "order", "bogus"])
def test_sort_reorders_only_the_50_survivors(index: SearchIndex, sort: str | None) -> None:
    rows = all_pages(index, sort=sort)
    window_ids = {p["product_id"] for p in RELEVANCE[:50]}
    assert {row["product_id"] for row in rows} == window_ids
    for page in range(1, 6):
        assert find_products(index, q="widget", page=page, sort=sort) == expected(page=page, sort=sort)


def test_cheaper_products_beyond_the_window_never_appear(index: SearchIndex) -> None:
    cheapest = min(WIDGETS, key=lambda p: p["price"])
    assert cheapest not in RELEVANCE[:50]  # the world is built so that this is a real check
    first = find_products(index, q="widget", page=1, sort="priceasc")[0]
    assert first["product_id"] != cheapest["product_id"]
    assert first["price"] == min(p["price"] for p in RELEVANCE[:50])


def test_sort_ties_keep_relevance_order(index: SearchIndex) -> None:
    rows = all_pages(index, sort="order")
    relevance_rank = {p["product_id"]: r for r, p in enumerate(RELEVANCE)}
    tied = 0
    for a, b in zip(rows, rows[1:], strict=False):
        assert a["sold_count"] >= b["sold_count"]
        if a["sold_count"] == b["sold_count"]:
            tied += 1
            assert relevance_rank[a["product_id"]] < relevance_rank[b["product_id"]]
    assert tied > 10


@pytest.mark.parametrize("shop", ["shop0", "shop1", "shop2", "deep"])
def test_shop_filter(index: SearchIndex, shop: str) -> None:
    rows = all_pages(index, shop_id=shop)
    assert rows == [row for page in range(1, 6) for row in expected(page=page, shop=shop)]
    assert rows and all(row["shop_id"] == shop for row in rows)


def test_survivors_are_found_deep_in_the_ranking(index: SearchIndex) -> None:
    deep = {p["product_id"] for p in WIDGETS if p["shop_id"] == "deep"}
    positions = [r for r, p in enumerate(RELEVANCE) if p["product_id"] in deep]
    assert min(positions) >= 50
    assert {row["product_id"] for row in all_pages(index, shop_id="deep")} == deep


def test_unknown_or_empty_shop(index: SearchIndex) -> None:
    assert find_products(index, q="widget", page=1, shop_id="nowhere") == []
    assert find_products(index, q="widget", page=1, shop_id="") == expected(page=1)


@pytest.mark.parametrize(
    ("low", "high"),
    [(20.0, 50.0), (None, 30.0), (70.0, None), (None, None), (38.0, 38.0), (90.0, 10.0)],
)
def test_price_filter_bounds_are_inclusive_and_optional(
    index: SearchIndex, low: float | None, high: float | None
) -> None:
    rows = all_pages(index, price=(low, high))
    assert rows == [row for page in range(1, 6) for row in expected(page=page, low=low, high=high)]
    if (low, high) == (38.0, 38.0):
        assert rows and {row["price"] for row in rows} == {38.0}


@pytest.mark.parametrize(
    "services",
    [
        ("official",),
        ("freeShipping",),
        ("COD",),
        ("flashsale",),
        ("official", "freeShipping"),
        ("COD", "flashsale"),
    ],
)
def test_service_filters_require_every_service(index: SearchIndex, services: tuple[str, ...]) -> None:
    rows = all_pages(index, service=services)
    assert rows == [row for page in range(1, 6) for row in expected(page=page, services=services)]
    assert rows and all(set(services) <= set(row["service"]) for row in rows)


def test_filters_and_sort_combine(index: SearchIndex) -> None:
    kwargs: dict[str, Any] = {
        "shop_id": "shop1",
        "price": (10.0, 80.0),
        "service": ("COD",),
        "sort": "pricedesc",
    }
    rows = all_pages(index, **kwargs)
    want = [
        row
        for page in range(1, 6)
        for row in expected(page=page, shop="shop1", low=10.0, high=80.0, services=("COD",), sort="pricedesc")
    ]
    assert rows == want and rows


def test_unknown_services_are_ignored(index: SearchIndex) -> None:
    assert find_products(index, q="widget", page=1, service=("teleport",)) == expected(page=1)


def test_scan_stops_after_max_hits(index: SearchIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bm25, "MAX_HITS", 60)
    assert all_pages(index, shop_id="deep") == [
        row for page in range(1, 6) for row in expected(page=page, shop="deep", ranked=RELEVANCE[:60])
    ]
    monkeypatch.setattr(bm25, "MAX_HITS", 50)
    assert all_pages(index, shop_id="deep") == []


def test_result_rows_have_exactly_the_summary_fields(index: SearchIndex) -> None:
    row = find_products(index, q="widget", page=1)[0]
    assert list(row) == ["product_id", "shop_id", "title", "price", "service", "sold_count"]
    assert isinstance(row["price"], float) and isinstance(row["service"], list)
    assert isinstance(row["sold_count"], int)


@pytest.mark.parametrize("q", ["", "   ", "the of and", "nothing-matches-this", "?!*"])
def test_queries_without_hits_are_empty(index: SearchIndex, q: str) -> None:
    assert find_products(index, q=q, page=1) == []


def test_fixture_catalog_semantics(tmp_path: Path, fixture_catalog_path: Path) -> None:
    build_index([fixture_catalog_path], tmp_path / "index")
    with open_index(tmp_path / "index") as fixture:

        def ids(**kwargs: Any) -> list[str]:
            return [row["product_id"] for row in find_products(fixture, q="running shoes", page=1, **kwargs)]

        # 1005 has "running" once (the others twice, title and attribute); the rest by length.
        assert ids() == ["1003", "1002", "1004", "1001", "1005"]
        assert ids(price=(None, 2000.0)) == ["1002", "1004", "1005"]
        assert ids(price=(None, 2000.0), sort="priceasc") == ["1005", "1004", "1002"]
        assert ids(shop_id="s1") == ["1002", "1001"]
        assert ids(service=("official",), sort="order") == ["1002", "1001"]
        assert ids(service=("COD", "freeShipping")) == ["1004"]
        assert ids(price=(1800.0, 3200.0)) == ["1002", "1001"]


def naive_find(index: SearchIndex, q: str, **filters: Any) -> list[str]:
    """ShoppingBench's loop literally: walk index.hits() and filter each hit."""
    low, high = filters.get("price", (None, None))
    kept = []
    for hit in index.hits(q):
        if filters.get("shop_id") and hit.shop_id != filters["shop_id"]:
            continue
        if (low is not None and hit.price < low) or (high is not None and hit.price > high):
            continue
        if any(s not in hit.service for s in filters.get("service", ())):
            continue
        kept.append(hit.product_id)
        if len(kept) == 50:
            break
    return kept


@pytest.mark.parametrize("seed", range(24))
def test_vectorised_filters_equal_walking_the_hits(
    index: SearchIndex, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    monkeypatch.setattr(bm25, "MAX_HITS", rng.choice([100_000, 30, 60, 100, 150]))
    filters: dict[str, Any] = {
        "shop_id": rng.choice([None, "shop0", "shop1", "deep"]),
        "price": (rng.choice([None, 10.0, 40.0]), rng.choice([None, 60.0, 95.0])),
        "service": tuple(rng.sample(SERVICE_NAMES, rng.randint(0, 2))),
    }
    q = rng.choice(["widget", "widget gadget", "gadget 7 widget", "filler3x1 widget"])
    got = [
        row["product_id"] for page in range(1, 6) for row in find_products(index, q=q, page=page, **filters)
    ]
    assert got == naive_find(index, q, **filters)
