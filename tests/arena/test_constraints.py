from typing import Any

from arena.constraints import (
    basket_meets_budget,
    basket_total,
    missing_pairs,
    similar_title,
    task_failures,
    unmet_constraints,
)
from arena.shoppingbench import task_from_row
from arena.types import GoldItem, PriceConstraint, Product


def _product(**fields: Any) -> Product:
    base = {"product_id": "1", "shop_id": "s", "title": "Red Mug", "price": 100.0, "sold_count": 0}
    return Product.model_validate({**base, **fields})


def test_pairs_must_sit_in_one_variant_or_the_attributes() -> None:
    product = _product(
        sku_options={"1": {"size": "s", "color": "red"}, "2": {"size": "l", "color": "blue"}},
        attributes={"fit": ["loose"], "color": ["green"]},
    )
    assert missing_pairs(product, [("size", "s"), ("color", "red")]) == []
    # Split over two variants: the best variant finds one, so one is missing.
    assert len(missing_pairs(product, [("size", "s"), ("color", "blue")])) == 1
    # Attributes combine with any variant.
    assert missing_pairs(product, [("size", "l"), ("fit", "loose"), ("color", "green")]) == []
    assert missing_pairs(_product(), [("fit", "loose")]) == [("fit", "loose")]


def test_unmet_constraints_names_each_check() -> None:
    item = GoldItem(
        product_id="1",
        titles=("Red Mug",),
        price=(
            PriceConstraint(mode="between", low=50, high=100),
            PriceConstraint(mode="greater than", low=120),
        ),
        service=("COD", "official"),
        sku_options=({"size": "l"},),
        attributes=({"fit": ("loose",)},),
    )
    product = _product(service=["COD"], attributes={"fit": ["loose"]})
    assert unmet_constraints(product, item) == ["price:1", "service:official", "pair:size=l"]
    renamed = product.model_copy(update={"title": "[Hot Sale] Red Mug"})
    assert unmet_constraints(renamed, item)[0] == "title"
    assert "title" not in unmet_constraints(renamed, item, title_match=similar_title)


def test_similar_title_needs_every_reference_word() -> None:
    assert similar_title("Original red MUG large", ["Red Mug"])
    assert not similar_title("Red Cup", ["Red Mug"])


def test_budget_follows_eval_voucher() -> None:
    voucher = {
        "voucher_type": "shop",
        "threshold": 170,
        "discount_type": "fixed",
        "face_value": 34,
        "discount": None,
        "cap": None,
        "price_after_voucher": 419.0,
        "budget": 425,
    }
    items = [{"product_id": "1", "title": ["A"]}, {"product_id": "2", "title": ["B"]}]
    task = task_from_row({"query": "q", "reward": items, "voucher": voucher}, intent="voucher")
    a, b = _product(product_id="1", title="A", price=253.0), _product(product_id="2", title="B", price=200.0)
    assert basket_total([a.price, b.price]) == 453.0
    assert basket_meets_budget(task, [a, b])  # 453 - 34 = 419 <= 425
    # A shop voucher does not apply across two shops: 453 > 425.
    assert not basket_meets_budget(task, [a, b.model_copy(update={"shop_id": "other"})])
    assert task_failures(task, [a, b.model_copy(update={"price": 300.0})]) == ["budget"]
    # Under the budget without the voucher is fine too, whatever the threshold.
    assert basket_meets_budget(task, [a.model_copy(update={"price": 100.0}), b])


def test_shop_tasks_need_one_shop() -> None:
    items = [{"product_id": "1", "title": ["A"]}, {"product_id": "2", "title": ["B"]}]
    task = task_from_row({"query": "q", "reward": items}, intent="shop")
    a, b = _product(product_id="1", title="A"), _product(product_id="2", title="B")
    assert task_failures(task, [a, b]) == []
    assert task_failures(task, [a, b.model_copy(update={"shop_id": "t"})]) == ["shop"]
    assert task_failures(task, [b, a]) == ["0:title", "1:title"]
