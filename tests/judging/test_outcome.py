from __future__ import annotations

import pytest

from arena.types import GoldItem, PriceConstraint, Product, Task, Voucher
from judging.outcome import score_item, score_outcome
from judging.titles import LEXICAL, EmbeddingTitleMatcher, lexical_similarity
from tests.judging.factory import catalog, knowledge_task, product_task, shop_task, voucher_task

CAT = catalog()


def outcome(task: Task, ids: list[str], threshold: float = 0.5):  # type: ignore[no-untyped-def]
    found = {i: CAT[i] for i in ids if i in CAT}
    return score_outcome(
        task, ids, found, matcher=LEXICAL, title_threshold=threshold, knowledge_title_threshold=0.8
    )


def test_lexical_similarity_is_token_set_cosine() -> None:
    assert lexical_similarity("Nike Air Zoom", "zoom air NIKE") == 1.0
    assert lexical_similarity("a b c d", "a b") == pytest.approx(2 / (4 * 2) ** 0.5)
    assert lexical_similarity("abc", "xyz") == 0.0
    assert lexical_similarity("", "xyz") == 0.0


def test_gt_short_circuits_every_constraint() -> None:
    gold = GoldItem(
        product_id="1001",
        titles=("Totally different words",),
        price=(PriceConstraint(mode="less than", high=1),),
    )
    item = score_item(CAT["1001"], gold, matcher=LEXICAL, threshold=0.5)
    assert item.gt and item.rule == 1.0 and set(item.fields.values()) == {1.0}


def test_correct_shop_task_succeeds() -> None:
    result = outcome(shop_task(), ["1001", "1002"])
    assert result.success
    assert (result.scores.rule, result.scores.gt, result.scores.product, result.scores.shop) == (
        1.0,
        1.0,
        1.0,
        1.0,
    )
    assert result.scores.budget is None


def test_shop_task_with_a_second_shop_fails_on_shop_only() -> None:
    task = Task(
        intent="shop",
        query="two running shoes",
        gold=(
            GoldItem(product_id="1001", titles=("Nike Air Zoom Pegasus Running Shoes Men",)),
            GoldItem(product_id="1002", titles=("Adidas Ultraboost Running Shoes Unisex",)),
        ),
    )
    result = outcome(task, ["1001", "1003"])  # 1003 matches item 2's title exactly but is shop s2
    assert result.scores.rule == 1.0 and result.scores.shop == 0.0
    assert not result.success


def test_missing_position_fails_shop_and_product() -> None:
    result = outcome(shop_task(), ["1001"])
    assert result.scores.product == 0.5 and result.scores.shop == 0.0 and result.scores.rule == 0.5
    assert result.items[1].failed == ("missing",)


def test_sku_best_variant_and_attributes_flattened() -> None:
    gold = GoldItem(
        product_id="x",
        titles=("Nike Air Zoom Pegasus Running Shoes Men",),
        sku_options=({"size": "43", "color_family": "white"},),
        attributes=({"brand": ("nike",)},),
    )
    assert score_item(CAT["1001"], gold, matcher=LEXICAL, threshold=0.5).rule == 1.0
    mixed = gold.model_copy(update={"sku_options": ({"size": "42", "color_family": "white"},)})
    item = score_item(CAT["1001"], mixed, matcher=LEXICAL, threshold=0.5)
    # No single variant has both 42 and white: the best variant misses one of the two pairs.
    assert item.rule == pytest.approx(3 / 4)
    assert len([f for f in item.failed if f.startswith("sku_attrs")]) == 1


def test_each_broken_constraint_is_named() -> None:
    gold = GoldItem(
        product_id="x",
        titles=("Zildjian Crash Cymbal 16 inch Bronze",),
        price=(PriceConstraint(mode="between", low=1, high=100),),
        service=("COD", "official"),
        attributes=({"material": ("bronze",)},),
    )
    item = score_item(CAT["2002"], gold, matcher=LEXICAL, threshold=0.5)
    assert set(item.failed) == {"price[0]", "service:COD"}
    assert item.rule == pytest.approx(3 / 5)
    assert item.fields == {"title": 1.0, "price": 0.0, "service": 0.5, "sku_attrs": 1.0}


def test_voucher_budget_only_holds_after_voucher() -> None:
    task = voucher_task()
    assert sum(CAT[i].price for i in ("3001", "3003")) > (task.budget or 0)
    result = outcome(task, ["3001", "3003"])
    assert result.scores.budget == 1.0 and result.success


def test_shop_voucher_does_not_apply_across_shops() -> None:
    task = voucher_task()
    # 3001 (s6, 120) + 4003 (s9, 75) = 195: over budget, and the shop voucher cannot apply.
    result = outcome(task, ["3001", "4003"], threshold=0.0)
    assert result.scores.budget == 0.0 and not result.success
    same_shop = outcome(task, ["3001", "3002"], threshold=0.0)  # s6 + s6: 215 - 40 = 175 > 150
    assert same_shop.scores.budget == 0.0


def test_percentage_voucher_cap() -> None:
    voucher = Voucher(voucher_type="platform", threshold=0, discount_type="percentage", discount=0.5, cap=10)
    task = Task(
        intent="voucher",
        query="q",
        gold=(GoldItem(product_id="3001", titles=("Stainless Steel Sponge Holder Kitchen Sink Caddy",)),),
        voucher=voucher,
        budget=111,
    )
    assert outcome(task, ["3001"]).scores.budget == 1.0  # 120 - min(60, cap 10) = 110
    tight = Task(**{**task.model_dump(exclude={"task_id"}), "budget": 109})
    assert outcome(tight, ["3001"]).scores.budget == 0.0


def test_product_task_title_threshold_decides() -> None:
    task = product_task()
    near = outcome(task, ["2002"])  # Zildjian bronze crash: similar words, wrong material, price ok
    assert not near.success and "sku_attrs:material=b20 bronze" in near.items[0].failed
    assert outcome(task, ["2001"]).success


def test_knowledge_web_rule() -> None:
    task = knowledge_task()
    assert outcome(task, ["2003"]).success
    wrong = outcome(task, ["1001"])
    assert wrong.scores.rule == 0.0 and wrong.scores.fields == {"kw": 0.0, "title": 0.0}
    # Another violin bow: keyword present, title similar enough only at a looser threshold.
    bow = Product(
        product_id="9", shop_id="s", title="Violin Bow Horsetail Hair Full Size Carbon", price=1, sold_count=0
    )
    found = {"9": bow}
    loose = score_outcome(
        task, ["9"], found, matcher=LEXICAL, title_threshold=0.5, knowledge_title_threshold=0.7
    )
    assert loose.scores.fields["kw"] == 1.0 and loose.success


def test_extra_ids_do_not_count_and_product_uses_first() -> None:
    result = outcome(product_task(), ["2001", "1001"])
    assert result.success and result.scores.product == 1.0


def test_embedding_matcher_caches_and_clips() -> None:
    calls: list[list[str]] = []

    def embed(texts):  # type: ignore[no-untyped-def]
        calls.append(list(texts))
        return [[1.0, 0.0] if "a" in t else [-1.0, 0.0] for t in texts]

    matcher = EmbeddingTitleMatcher(embed, "toy")
    assert matcher.similarity("a", "a") == 1.0
    assert matcher.similarity("a", "b") == 0.0  # cosine -1 clipped to 0
    assert calls == [["a"], ["b"]]
    assert matcher.name == "embedding:toy"
