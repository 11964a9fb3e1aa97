import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from arena.catalog import iter_products, write_products
from arena.constraints import similar_title, task_failures
from arena.from_tasks import FromTasksCatalog, build_from_tasks
from arena.prices import voucher_total_cents
from arena.shoppingbench import load_shoppingbench, task_from_row
from arena.types import Product, Task


@pytest.fixture(scope="module")
def tasks(shoppingbench_files: list[Path]) -> list[Task]:
    return load_shoppingbench(shoppingbench_files)


@pytest.fixture(scope="module")
def catalog(tasks: list[Task]) -> FromTasksCatalog:
    return build_from_tasks(tasks, seed=3)


@pytest.fixture(scope="module")
def written(catalog: FromTasksCatalog, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The catalog as written and read back, as plain dicts keyed by id (what a scorer sees)."""
    path = tmp_path_factory.mktemp("ft") / "catalog.jsonl.gz"
    write_products(catalog.products, path)
    return {p.product_id: p.model_dump(mode="json") for p in iter_products([path])}


def _raw_rows(files: list[Path]) -> list[tuple[str, dict[str, Any]]]:
    rows = []
    for path in files:
        for line in path.read_text(encoding="utf-8").split("\n"):
            if line.strip():
                rows.append((path.name, json.loads(line)))
    return rows


# An independent transcription of ShoppingBench's rule check (rule_score_reward) on raw rows
# and product dicts, with the title embedding replaced by exact equality: every count must hit.
def _rule_misses(product: dict[str, Any], reward: dict[str, Any]) -> list[str]:
    misses = []
    if product["title"] not in reward["title"]:
        misses.append("title")
    for price_range in reward.get("price", []):
        for mode, (low, high) in price_range.items():
            price = product["price"]
            if mode == "less than":
                ok = price <= high
            elif mode == "greater than":
                ok = price >= low
            else:
                ok = mode == "between" and low <= price <= high
            if not ok:
                misses.append(f"price {mode} {low} {high}")
    misses += [f"service {s}" for s in reward.get("service", []) if s not in product["service"]]
    wanted = [(k, v) for option in reward.get("sku_options", []) for k, v in option.items()]
    wanted += [(k, v) for attr in reward.get("attributes", []) for k, vs in attr.items() for v in vs]
    attr_pairs = {(k, v) for k, vs in product["attributes"].items() for v in vs}
    best = len(wanted)
    for variant in [{}, *product["sku_options"].values()]:
        found = sum(1 for pair in wanted if pair in attr_pairs or pair in set(variant.items()))
        best = min(best, len(wanted) - found)
    if best:
        misses.append(f"{best} sku/attribute pairs")
    return misses


def test_every_gold_is_present_and_meets_its_own_constraints(
    shoppingbench_files: list[Path], written: dict[str, dict[str, Any]]
) -> None:
    rows = _raw_rows(shoppingbench_files)
    assert len(rows) == 900
    for name, row in rows:
        reward = row["reward"]
        if "web_simpleqa" in name:
            assert written[reward["product_id"]] == reward  # the knowledge record, exactly
            continue
        for item in [reward] if isinstance(reward, dict) else reward:
            assert _rule_misses(written[item["product_id"]], item) == [], (name, item)


def test_voucher_baskets_meet_their_budgets(tasks: list[Task], written: dict[str, dict[str, Any]]) -> None:
    vouchers = [t for t in tasks if t.intent == "voucher"]
    assert len(vouchers) == 250
    for task in vouchers:
        assert task.voucher is not None and task.budget is not None
        basket = [written[item.product_id] for item in task.gold]
        total = 0.0
        for product in basket:
            total += product["price"]
        shops = len({p["shop_id"] for p in basket})
        assert task.voucher.price_after(total, shops) <= task.budget
        # The basket total is the one ShoppingBench's catalog had (back-solved), to the cent.
        assert round(total * 100) == voucher_total_cents(task)


def test_shop_baskets_share_one_shop(tasks: list[Task], written: dict[str, dict[str, Any]]) -> None:
    for task in tasks:
        if task.intent == "shop" or (task.voucher is not None and task.voucher.voucher_type == "shop"):
            assert len({written[item.product_id]["shop_id"] for item in task.gold}) == 1


def test_whole_tasks_pass_and_nothing_conflicts(tasks: list[Task], catalog: FromTasksCatalog) -> None:
    by_id = {p.product_id: p for p in catalog.products}
    for task in tasks:
        assert task_failures(task, [by_id[item.product_id] for item in task.gold]) == []
    assert catalog.conflicts == []
    assert len(catalog.gold_ids) == len({item.product_id for t in tasks for item in t.gold})


def test_each_decoy_breaks_exactly_its_constraint(tasks: list[Task], catalog: FromTasksCatalog) -> None:
    by_id = {p.product_id: p for p in catalog.products}
    by_task = {t.task_id: t for t in tasks}
    gold_ids = set(catalog.gold_ids)
    assert len(by_id) == len(catalog.products)  # no id collides
    assert all(d.product_id not in gold_ids for d in catalog.decoys)
    per_gold = Counter(d.gold_id for d in catalog.decoys)
    assert set(per_gold.values()) == {3} and set(per_gold) == gold_ids
    kinds = Counter(d.kind for d in catalog.decoys)
    assert set(kinds) == {"sku", "attribute", "service", "price", "budget", "shop", "title"}
    for d in catalog.decoys:
        task, decoy, gold = by_task[d.task_id], by_id[d.product_id], by_id[d.gold_id]
        basket = [by_id[item.product_id] for item in task.gold]
        basket[d.item] = decoy
        assert task_failures(task, basket, title_match=similar_title) == [d.breaks]
        assert decoy.title != gold.title
        _assert_kind_change(d.kind, decoy, gold)


def _assert_kind_change(kind: str, decoy: Product, gold: Product) -> None:
    same = {"price", "service", "sku_options", "attributes", "shop_id"}
    changed = {
        "price": {"price"},
        "budget": {"price"},
        "service": {"service"},
        "shop": {"shop_id"},
        "sku": {"sku_options", "attributes"},
        "attribute": {"sku_options", "attributes"},
        "title": set(),
    }[kind]
    if kind != "shop":
        same.discard("shop_id")  # decoys of non-shop golds live in other shops anyway
    for name in same - changed:
        assert getattr(decoy, name) == getattr(gold, name), (kind, name)
    if kind == "budget":
        assert decoy.price > gold.price
    if kind == "service":
        assert set(decoy.service) < set(gold.service)


def test_same_seed_same_catalog(tasks: list[Task], catalog: FromTasksCatalog) -> None:
    again = build_from_tasks(tasks, seed=3)
    assert again.products == catalog.products and again.decoys == catalog.decoys
    other = build_from_tasks(tasks[:50], seed=4)
    assert [p.product_id for p in other.products] != [p.product_id for p in catalog.products[:50]]


def _product_task(pid: str, title: str, **reward: Any) -> Task:
    return task_from_row(
        {"query": f"find {title} {reward}", "reward": {"product_id": pid, "title": [title], **reward}},
        intent="product",
    )


def test_conflicts_are_reported_not_fatal() -> None:
    cheap = _product_task("77", "Red Mug", price=[{"less than": [None, 100]}])
    dear = _product_task("77", "Red Mug", price=[{"greater than": [500, None]}])
    renamed = _product_task("77", "Blue Mug")
    result = build_from_tasks([cheap, dear, renamed], seed=1, decoys=1)
    reasons = " ".join(c.reason for c in result.conflicts)
    assert "price ranges do not intersect" in reasons and "reference titles differ" in reasons
    gold = next(p for p in result.products if p.product_id == "77")
    assert gold.price <= 100  # the earlier range wins


def test_merged_occurrences_get_their_own_variants() -> None:
    small = _product_task("5", "Tee", sku_options=[{"size": "s", "color_family": "red"}])
    large = _product_task("5", "Tee", sku_options=[{"size": "l"}], attributes=[{"fit": ["loose"]}])
    # Compatible with the first variant: joins it rather than adding another.
    sleeve = _product_task("5", "Tee", sku_options=[{"color_family": "red", "sleeve": "short"}])
    result = build_from_tasks([small, large, sleeve], seed=2, decoys=0)
    gold = next(p for p in result.products if p.product_id == "5")
    variants = list(gold.sku_options.values())
    assert {"size": "s", "color_family": "red", "sleeve": "short"} in variants
    assert any(v.get("size") == "l" for v in variants)
    for task in (small, large, sleeve):
        assert task_failures(task, [gold]) == []
    assert result.conflicts == []


@pytest.mark.parametrize(
    ("voucher", "total"),
    [
        ({"discount_type": "fixed", "face_value": 34, "price_after_voucher": 419.0}, 45300),
        (
            {"discount_type": "percentage", "discount": 0.14, "cap": 1465, "price_after_voucher": 1644.019},
            191165,
        ),
        ({"discount_type": "percentage", "discount": 0.35, "cap": 134, "price_after_voucher": 281.0}, 41500),
    ],
)
def test_voucher_totals_are_back_solved(voucher: dict[str, Any], total: int) -> None:
    fields = {"voucher_type": "platform", "threshold": 10, "face_value": None, "discount": None, "cap": None}
    row = {
        "query": "q",
        "reward": [{"product_id": "1", "title": ["A"]}],
        "voucher": {**fields, **voucher, "budget": 5000},
    }
    task = task_from_row(row, intent="voucher")
    assert voucher_total_cents(task) == total
    assert task.voucher is not None
    assert task.voucher.price_after(total / 100, 1) == pytest.approx(voucher["price_after_voucher"])


def test_siblings_and_background_fill_shops(tasks: list[Task], catalog: FromTasksCatalog) -> None:
    shop_tasks = [t for t in tasks if t.intent == "shop"]
    by_id = {p.product_id: p for p in catalog.products}
    shop_of = {by_id[t.gold[0].product_id].shop_id for t in shop_tasks}
    members = Counter(p.shop_id for p in catalog.products)
    assert all(
        members[s] >= len(t.gold) + 3 for t in shop_tasks for s in [by_id[t.gold[0].product_id].shop_id]
    )
    assert catalog.siblings >= 3 * len(shop_of)
    small = build_from_tasks(tasks[:20], seed=1, decoys=1, siblings=0, background=50)
    assert small.background == 50
    assert len(small.products) == len(small.gold_ids) + len(small.decoys) + 50
