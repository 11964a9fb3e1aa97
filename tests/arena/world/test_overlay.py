"""WorldOverlay: every tool honours the world (delisted, prices, stock, new listings); empty is the base."""

from __future__ import annotations

import json
import random

import pytest

from arena.index import SearchIndex
from arena.tools import ToolContext, run_tool
from arena.world.compile import compile_world
from arena.world.overlay import WorldOverlay
from arena.world.types import WorldDelta, WorldPack

_ALL = "arena-2"


@pytest.fixture(scope="module")
def pack(world_base: SearchIndex) -> WorldPack:
    return compile_world("overlay-test", world_base)


@pytest.fixture(scope="module")
def world(world_base: SearchIndex, pack: WorldPack) -> WorldOverlay:
    return WorldOverlay(world_base, pack.delta)


def _call(index: SearchIndex | WorldOverlay, tool: str, **arguments: object) -> str:
    return run_tool(tool, json.dumps(arguments), ToolContext(index=index, toolset=_ALL)).content


def _found_ids(index: SearchIndex | WorldOverlay, q: str, **filters: object) -> list[str]:
    ids: list[str] = []
    for page in range(1, 6):
        ids += [
            row["product_id"] for row in json.loads(_call(index, "find_product", q=q, page=page, **filters))
        ]
    return ids


def test_a_delisted_product_never_comes_back(
    world_base: SearchIndex, world: WorldOverlay, pack: WorldPack
) -> None:
    for product_id in pack.delta.delisted[:10]:
        product = world_base.product(product_id)
        assert product is not None and world.product(product_id) is None
        assert product_id in _found_ids(world_base, product.title)
        assert product_id not in _found_ids(world, product.title)
        assert product_id not in _found_ids(world, product.title, shop_id=product.shop_id, sort="priceasc")
        assert json.loads(_call(world, "view_product_information", product_ids=product_id)) == {
            "error": f"no product has any of these ids: {product_id}"
        }
        assert product_id not in _call(world, "find_products_in_same_shop", shop_id=product.shop_id)
        assert "unknown product ids" in _call(
            world, "calculate_voucher", product_ids=product_id, voucher_type="platform", threshold=0,
            discount_type="fixed", face_value=1,
        )  # fmt: skip


def test_a_price_move_shows_in_search_filters_and_baskets(world: WorldOverlay, pack: WorldPack) -> None:
    move = pack.delta.price_moves[0]
    product = world.product(move.product_id)
    assert product is not None and product.price == move.new_price != move.old_price
    rows = [r for p in range(1, 6) for r in json.loads(_call(world, "find_product", q=product.title, page=p))]
    assert [r["price"] for r in rows if r["product_id"] == move.product_id] == [move.new_price]
    low, high = sorted((move.old_price, move.new_price))
    inside = f"{move.new_price}-{move.new_price}"
    assert move.product_id in _found_ids(world, product.title, price=inside)
    basket = json.loads(
        _call(world, "calculate_voucher", product_ids=move.product_id, voucher_type="platform", threshold=0,
              discount_type="fixed", face_value=0)
    )  # fmt: skip
    assert basket["total"] == move.new_price and low <= basket["total"] <= high


def test_a_new_listing_is_findable_by_its_title_words(world: WorldOverlay, pack: WorldPack) -> None:
    for listing in pack.delta.new_listings[:10]:
        product = listing.product
        assert product.product_id in _found_ids(world, product.title)
        info = json.loads(_call(world, "view_product_information", product_ids=product.product_id))
        assert info[0]["product_id"] == product.product_id
        assert product.product_id in _call(
            world, "find_products_in_same_shop", shop_id=product.shop_id, q=product.title
        )


def test_a_new_listing_scores_like_its_source(world: WorldOverlay, pack: WorldPack) -> None:
    listing = pack.delta.new_listings[0]
    ordinals, scores = world.match(listing.product.title)
    by_id = {world.product_id_at(int(o)): float(s) for o, s in zip(ordinals, scores, strict=True)}
    assert by_id[listing.product.product_id] == pytest.approx(by_id[listing.derived_from], rel=1e-6)


def test_stock_levels_show_in_rows(world: WorldOverlay, pack: WorldPack) -> None:
    level = next(s for s in pack.delta.stock if s.stock == 0)
    info = json.loads(_call(world, "view_product_information", product_ids=level.product_id))
    assert info[0]["stock"] == 0
    product = world.product(level.product_id)
    assert product is not None
    rows = [r for p in range(1, 6) for r in json.loads(_call(world, "find_product", q=product.title, page=p))]
    assert [r.get("stock") for r in rows if r["product_id"] == level.product_id] == [0]


def test_an_empty_delta_answers_byte_identically(world_base: SearchIndex) -> None:
    empty = WorldOverlay(world_base, WorldDelta())
    rng = random.Random(5)
    sorts = (None, "priceasc", "pricedesc", "order")
    for _ in range(300):
        product = world_base.product(world_base.product_id_at(rng.randrange(len(world_base))))
        assert product is not None
        words = product.title.split()
        start = rng.randrange(len(words))
        arguments: dict[str, object] = {
            "q": " ".join(words[start : start + rng.randint(1, 4)]),
            "page": rng.randint(1, 3),
        }
        if rng.random() < 0.3:
            arguments["price"] = f"{int(product.price * 0.5)}-{int(product.price * 1.5) + 1}"
        if rng.random() < 0.3:
            arguments["sort"] = rng.choice(sorts)
        if rng.random() < 0.2:
            arguments["service"] = "official"
        if rng.random() < 0.2:
            arguments["shop_id"] = product.shop_id
        arguments = {k: v for k, v in arguments.items() if v is not None}
        assert _call(empty, "find_product", **arguments) == _call(world_base, "find_product", **arguments)
        ids = f"{product.product_id},missing-id"
        assert _call(empty, "view_product_information", product_ids=ids) == _call(
            world_base, "view_product_information", product_ids=ids
        )
        assert _call(empty, "find_products_in_same_shop", shop_id=product.shop_id) == _call(
            world_base, "find_products_in_same_shop", shop_id=product.shop_id
        )
