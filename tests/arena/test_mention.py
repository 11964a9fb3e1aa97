import random

import pytest

from arena import phrasing
from arena.mention import mentions_all, missing_mentions
from arena.templates import name_span, product_query, shop_query, title_words, voucher_query
from arena.types import GoldItem, PriceConstraint, Task, Voucher
from arena.wording import normalise_text

ITEM = GoldItem(
    product_id="p1",
    titles=("Nike Air Zoom Pegasus Running Shoes Men",),
    price=(PriceConstraint(mode="between", low=1500, high=4000),),
    service=("official", "COD"),
    sku_options=({"size": "int:42", "color_family": "black"},),
    attributes=({"closure_type": ("lace-up",)},),
)
SECOND = GoldItem(product_id="p2", titles=("Adidas Ultraboost Light Sneakers",), service=("flashsale",))


def product_task(query: str) -> Task:
    return Task(intent="product", query=query, gold=(ITEM,))


def test_a_complete_query_passes() -> None:
    query = (
        "Show me Pegasus running shoes in black, size 42, lace-up, from LazMall, with COD, 1500 to 4000 PHP."
    )
    assert missing_mentions(product_task(query)) == []


@pytest.mark.parametrize(
    ("dropped", "expected"),
    [
        ("in black, ", "sku color_family='black'"),
        ("size 42, ", "sku size='int:42'"),
        ("from LazMall, ", "service official"),
        ("with COD, ", "service COD"),
        ("lace-up, ", "attribute closure_type='lace-up'"),
        ("1500 to ", "price between bound"),
    ],
)
def test_each_dropped_constraint_is_caught(dropped: str, expected: str) -> None:
    query = (
        "Show me Pegasus running shoes in black, size 42, lace-up, from LazMall, with COD, 1500 to 4000 PHP."
    )
    missing = missing_mentions(product_task(query.replace(dropped, "")))
    assert expected in missing


def test_price_needs_a_direction_word() -> None:
    item = ITEM.model_copy(update={"price": (PriceConstraint(mode="less than", high=300),), "service": ()})
    base = "Pegasus running shoes in black size 42 lace-up"
    assert missing_mentions(Task(intent="product", query=f"{base}, under 300 pesos", gold=(item,))) == []
    assert "price direction 'less than'" in missing_mentions(
        Task(intent="product", query=f"{base}, 300", gold=(item,))
    )


def test_title_words_are_required() -> None:
    assert "title words of" in " ".join(
        missing_mentions(product_task("Something black size 42, COD, LazMall"))
    )


def test_voucher_numbers_and_scope_are_required() -> None:
    voucher = Voucher(voucher_type="shop", threshold=500, discount_type="percentage", discount=0.2, cap=150)
    gold = (SECOND,)
    good = (
        "Adidas ultraboost sneakers on flash sale. My budget is 900. "
        "The voucher only works in the same shop, needs 500 spent, and gives 20% off up to 150."
    )
    assert missing_mentions(Task(intent="voucher", query=good, gold=gold, voucher=voucher, budget=900)) == []
    bad = good.replace("the same shop", "any shop").replace("up to 150", "")
    missing = missing_mentions(Task(intent="voucher", query=bad, gold=gold, voucher=voucher, budget=900))
    assert set(missing) == {"voucher cap", "voucher scope shop"}


def test_every_service_phrase_names_a_synonym() -> None:
    for service in phrasing.SERVICE_SYNONYMS:
        synonyms = [f" {normalise_text(s)} " for s in phrasing.SERVICE_SYNONYMS[service]]
        for phrase in phrasing.SERVICE_MODIFIERS[service] + phrasing.SERVICE_STATEMENTS[service]:
            assert any(s in f" {normalise_text(phrase)} " for s in synonyms), (service, phrase)


def test_templates_mention_everything_for_many_seeds() -> None:
    voucher = Voucher(voucher_type="platform", threshold=1234, discount_type="fixed", face_value=99)
    for seed in range(300):
        rng = random.Random(seed)
        queries = [
            Task(intent="product", query=product_query(ITEM, "pegasus running shoes", rng), gold=(ITEM,)),
            Task(
                intent="shop",
                query=shop_query([ITEM, SECOND], ["running shoes", "ultraboost sneakers"], rng),
                gold=(ITEM, SECOND),
            ),
            Task(
                intent="voucher",
                query=voucher_query(
                    [ITEM, SECOND], ["running shoes", "ultraboost sneakers"], voucher, 4321, rng
                ),
                gold=(ITEM, SECOND),
                voucher=voucher,
                budget=4321,
            ),
        ]
        for task in queries:
            assert mentions_all(task), (seed, task.query, missing_mentions(task))


def test_templates_vary_the_wording() -> None:
    texts = {product_query(ITEM, "pegasus running shoes", random.Random(seed)) for seed in range(200)}
    assert len(texts) > 150
    openers = {text.split(" pegasus")[0].split(" a ")[0].split(" some ")[0] for text in texts}
    assert len(openers) >= 8


def test_title_words_drop_noise() -> None:
    assert title_words("[COD] NEW Original Nike Air-Zoom Shoes for Men 2024 Free Shipping") == [
        "nike",
        "air-zoom",
        "shoes",
        "men",
    ]


def test_item_names_end_at_the_head_noun() -> None:
    def name(title: str) -> str:
        words = title_words(title)
        start, end = name_span(words, title, random.Random(0))
        return " ".join(words[start:end])

    assert name("Heart String Violin Bows Full Size Handmade Horsetail Hair Violin Bow for 4/4 3/4").endswith(
        "violin bow"
    )
    assert name("Adidas Breathable lightweight lace-up unisex Sneakers MT106").endswith(
        "lace-up unisex sneakers"
    )
    assert name("Nike Air Zoom Pegasus Running Shoes Men").endswith("running shoes")
    assert 2 <= len(name("Simple Toaster").split()) <= 2
