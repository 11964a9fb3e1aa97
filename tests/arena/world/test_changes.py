"""Changes during an episode: declared in the pack, answered per world version, logged with it."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from arena.episode import Budgets, EpisodeRegistry, EpisodeTokens, run_logged
from arena.errors import WorldError
from arena.index import SearchIndex
from arena.tools import ToolContext, run_tool
from arena.world.changes import cheapest_fits, compile_changes, truth_at
from arena.world.compile import compile_world
from arena.world.overlay import WorldOverlay
from arena.world.pack import DELTA, load_pack, save_pack
from arena.world.types import WorldChange, WorldDelta, WorldPack, WorldSpec, WorldTask


@pytest.fixture(scope="module")
def pack(world_base: SearchIndex) -> WorldPack:
    return compile_world("changes-both", world_base)


@pytest.fixture(scope="module")
def world(world_base: SearchIndex, pack: WorldPack) -> WorldOverlay:
    return WorldOverlay(world_base, pack.delta)


@pytest.fixture(scope="module")
def contested(world: WorldOverlay, pack: WorldPack) -> WorldTask:
    """A product task with a runner-up: the one whose cheapest fit a change can reprice."""
    return next(t for t in pack.tasks if t.basis == "cheapest_in_stock" and len(cheapest_fits(world, t)) >= 2)


def _price(world: WorldOverlay, product_id: str) -> float:
    product = world.product(product_id)
    assert product is not None
    return product.price


def test_the_compiler_declares_changes_and_their_tasks_record_the_truth_per_version(
    pack: WorldPack, world: WorldOverlay
) -> None:
    changes = pack.delta.changes
    assert changes, "the default spec reprices or sells out at least one task's cheapest fit"
    low, high = pack.manifest.spec.change_after
    assert all(low <= c.after_calls <= high and (c.price is not None) != (c.stock == 0) for c in changes)
    assert {c.price is None for c in changes} == {True, False}, "this seed has both kinds"
    revised = [t for t in pack.tasks if t.revisions]
    assert revised
    for task in revised:
        first, last = task.revisions[0], task.revisions[-1]
        assert first.version == 0 and first.product_id == task.task.gold[0].product_id
        assert last.product_id != first.product_id
        later = world.at_version(len(changes))
        sold_out = later.stock_levels([first.product_id]).get(first.product_id) == 0
        assert sold_out or _price(later, first.product_id) > last.price
        assert last.price == _price(later, last.product_id)


def test_the_same_seed_declares_the_same_changes(world_base: SearchIndex, pack: WorldPack) -> None:
    again = compile_world("changes-both", world_base)
    assert again.delta.changes == pack.delta.changes and again.manifest.pack_hash == pack.manifest.pack_hash


def test_each_version_answers_with_its_changes_and_version_0_is_the_world(
    world: WorldOverlay, pack: WorldPack
) -> None:
    version, change = next((v, c) for v, c in enumerate(pack.delta.changes, 1) if c.price is not None)
    before, after = world.at_version(version - 1), world.at_version(version)
    assert world.at_version(0) is world and world.at_version(version) is after  # made once, then shared
    assert _price(after, change.product_id) == change.price != _price(before, change.product_id)
    product = before.product(change.product_id)
    assert product is not None
    for index, price in ((before, product.price), (after, change.price)):
        rows = json.loads(
            run_tool(
                "view_product_information",
                json.dumps({"product_ids": product.product_id}),
                ToolContext(index=index),
            ).content
        )
        assert rows and "price" not in rows[0]  # as in ShoppingBench: no price here
        hits = {h.product_id: h.price for h in index.hits_at(*index.match(product.title))}
        assert hits[product.product_id] == price
    with pytest.raises(WorldError, match="out of range"):
        world.at_version(len(pack.delta.changes) + 1)


def test_a_call_runs_at_the_version_its_seq_sees_and_the_log_records_it(
    world: WorldOverlay, contested: WorldTask
) -> None:
    gold = contested.task.gold[0].product_id
    changed = world.with_changes([WorldChange(after_calls=2, product_id=gold, price=9999.0)])
    ctx = ToolContext(index=changed)
    args = json.dumps({"q": contested.task.gold[0].titles[0], "page": 1})
    entries = [
        run_logged("find_product", args, ctx, episode_id="e", seq=seq, call_id=f"c{seq}") for seq in range(4)
    ]
    assert [e.world_version for e in entries] == [0, 0, 1, 1]
    prices = [{r["product_id"]: r["price"] for r in json.loads(e.result)} for e in entries]
    assert prices[0] == prices[1] and prices[2] == prices[3]
    assert gold in prices[0] and prices[0][gold] != 9999.0 and prices[2][gold] == 9999.0


def test_the_tool_server_logs_versions_and_a_static_catalog_logs_none(
    world_base: SearchIndex, world: WorldOverlay, contested: WorldTask
) -> None:
    gold = contested.task.gold[0].product_id
    changed = world.with_changes([WorldChange(after_calls=1, product_id=gold, stock=0)])
    registry = EpisodeRegistry(EpisodeTokens(b"k" * 32))
    for index, expected in ((changed, [0, 1]), (world_base, [None, None])):
        _, token = registry.open_episode("t", "hk", Budgets(max_calls=5, max_seconds=60))
        ctx = ToolContext(index=index)
        for n in range(2):
            entry = registry.call_tool(
                token, "view_product_information", json.dumps({"product_ids": gold}), call_id=f"c{n}", ctx=ctx
            )
        log = registry.log(entry.episode_id)
        assert [e.world_version for e in log] == expected
    assert "world_version" not in log[0].model_dump(mode="json")  # a static entry dumps as before


def test_a_pack_with_changes_round_trips_and_a_tampered_change_is_refused(
    pack: WorldPack, tmp_path: Path
) -> None:
    save_pack(pack, tmp_path / "p")
    assert load_pack(tmp_path / "p").delta.changes == pack.delta.changes
    path = tmp_path / "p" / DELTA
    body = json.loads(path.read_text())
    body["changes"][0]["after_calls"] = body["changes"][0]["after_calls"] + 1
    path.write_text(json.dumps(body, sort_keys=True, separators=(",", ":")) + "\n")
    with pytest.raises(WorldError, match="part delta.json does not match"):
        load_pack(tmp_path / "p")


def test_changes_out_of_order_or_on_unknown_products_are_refused(world: WorldOverlay) -> None:
    with pytest.raises(ValueError, match="sorted"):
        WorldDelta(
            changes=(
                WorldChange(after_calls=3, product_id="b", price=1),
                WorldChange(after_calls=1, product_id="a", price=1),
            )
        )
    with pytest.raises(ValueError, match="sets a price"):
        WorldChange(after_calls=1, product_id="a")
    with pytest.raises(WorldError, match="lacks"):
        world.with_changes([WorldChange(after_calls=1, product_id="no-such-product", price=1.0)])


def test_truth_at_moves_the_gold_and_caps_its_price(world: WorldOverlay, contested: WorldTask) -> None:
    plain = contested.model_copy(update={"revisions": ()})
    changed, (task,) = compile_changes(
        world, [plain], random.Random(3), WorldSpec(changes=1, stock_changes=0, change_after=(2, 2))
    )
    assert changed.delta.changes[0].after_calls == 2 and len(task.revisions) == 2
    first, later = truth_at(task, 0), truth_at(task, 1)
    assert first is not None and later is not None
    assert first.gold[0].product_id == contested.task.gold[0].product_id
    assert later.gold[0].product_id == task.revisions[1].product_id
    assert later.gold[0].price[-1].high == task.revisions[1].price
    assert later.task_id != contested.task.task_id  # a task of its own: only scored against, never served
    assert truth_at(plain, 1) is None
