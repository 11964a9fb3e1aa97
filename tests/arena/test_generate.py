import math
from collections import Counter

import httpx
import openai
import pytest

from arena.errors import InvalidTask
from arena.generate import GENERATOR_VERSION, GenerateConfig, generate_tasks, make_finder
from arena.index import SearchIndex
from arena.mention import missing_mentions
from arena.paraphrase import Paraphraser
from arena.solvability import task_problems
from arena.types import GoldItem, Task


def products_of(index: SearchIndex, task: Task) -> dict[str, object]:
    return dict(index.products([item.product_id for item in task.gold]))


def test_same_seed_same_tasks_other_seed_other_tasks(synth_index: SearchIndex) -> None:
    first, _ = generate_tasks(synth_index, n=60, seed=11, finder=make_finder(synth_index))
    again, _ = generate_tasks(synth_index, n=60, seed=11, finder=make_finder(synth_index))
    other, _ = generate_tasks(synth_index, n=60, seed=12, finder=make_finder(synth_index))
    assert [t.model_dump() for t in first] == [t.model_dump() for t in again]
    assert len({t.task_id for t in first} & {t.task_id for t in other}) == 0


def test_thousands_of_generated_tasks_are_solvable_and_mention_every_constraint(
    synth_index: SearchIndex,
) -> None:
    tasks, report = generate_tasks(synth_index, n=2400, seed=5)
    assert report.tasks == len(tasks) == 2400
    assert report.rejected["unsolvable"] == 0
    for task in tasks:
        products = synth_index.products([item.product_id for item in task.gold])
        assert task_problems(task, products) == [], task.query
        assert missing_mentions(task) == [], task.query
        assert task.catalog_version == synth_index.catalog_version
        assert task.generator_version == GENERATOR_VERSION
        if task.intent == "shop":
            assert 2 <= len(task.gold) <= 4 and len({products[i.product_id].shop_id for i in task.gold}) == 1
        if task.intent == "voucher":
            assert task.voucher is not None and task.budget is not None
            total = sum(products[i.product_id].price for i in task.gold)
            shops = len({products[i.product_id].shop_id for i in task.gold})
            after = task.voucher.price_after(total, shops)
            assert task.voucher.applies(total, shops) and after <= task.budget <= math.ceil(after) * 1.1 + 1
            assert all(not item.price for item in task.gold)
    gold_ids = [item.product_id for task in tasks for item in task.gold]
    assert len(gold_ids) == len(set(gold_ids))  # a product is gold at most once per run
    assert Counter(t.intent for t in tasks) == {"product": 800, "shop": 800, "voucher": 800}
    assert {(t.intent, t.difficulty) for t in tasks} >= {
        (intent, level) for intent in ("product", "shop", "voucher") for level in ("easy", "medium", "hard")
    }


def test_fields_are_kept_about_half_the_time(synth_index: SearchIndex) -> None:
    tasks, _ = generate_tasks(synth_index, n=600, seed=9, config=GenerateConfig(intents=("product",)))
    priced = sum(bool(t.gold[0].price) for t in tasks) / len(tasks)
    modes = Counter(t.gold[0].price[0].mode for t in tasks if t.gold[0].price)
    assert 0.4 < priced < 0.6
    assert set(modes) == {"less than", "greater than", "between"}
    for task in tasks:
        product = synth_index.product(task.gold[0].product_id)
        assert product is not None and task.gold[0].titles == (product.title,)
        for price in task.gold[0].price:  # widened strictly around the price
            assert price.low is None or price.low < product.price
            assert price.high is None or price.high > product.price


def test_generated_gold_is_findable_by_its_name(synth_index: SearchIndex) -> None:
    asked: list[tuple[str, GoldItem]] = []
    finder = make_finder(synth_index)

    def spy(name: str, item: GoldItem) -> list[str]:
        asked.append((name, item))
        return finder(name, item)

    tasks, report = generate_tasks(synth_index, n=90, seed=3, finder=spy)
    assert len(tasks) == 90
    kept = {item.product_id for task in tasks for item in task.gold}
    found = {item.product_id for name, item in asked if item.product_id in finder(name, item)}
    assert kept <= found


def test_unfindable_gold_is_never_kept(synth_index: SearchIndex) -> None:
    config = GenerateConfig(max_draws_per_task=30)
    tasks, report = generate_tasks(synth_index, n=5, seed=1, config=config, finder=lambda name, item: [])
    assert tasks == [] and report.rejected["not_findable"] > 0


def test_intents_and_avoided_products(synth_index: SearchIndex) -> None:
    first, _ = generate_tasks(synth_index, n=50, seed=4, config=GenerateConfig(intents=("shop",)))
    avoided = {item.product_id for task in first for item in task.gold}
    second, _ = generate_tasks(
        synth_index, n=50, seed=4, config=GenerateConfig(intents=("shop",)), avoid_product_ids=avoided
    )
    assert {t.intent for t in first + second} == {"shop"}
    assert not avoided & {item.product_id for task in second for item in task.gold}
    with pytest.raises(InvalidTask):
        generate_tasks(synth_index, n=1, seed=0, config=GenerateConfig(intents=("knowledge",)))


def test_a_faithful_paraphrase_is_used_and_a_lossy_one_falls_back(synth_index: SearchIndex) -> None:
    plain, _ = generate_tasks(synth_index, n=30, seed=8)

    def faithful(text: str) -> str:
        return "Hi there! " + text

    def lossy(text: str) -> str:
        return "Hi there! I want something nice."

    reworded, good = generate_tasks(synth_index, n=30, seed=8, paraphraser=faithful)
    assert good.paraphrased == 30 and good.paraphrase_fallbacks == 0
    assert all(t.query.startswith("Hi there! ") for t in reworded)
    assert [t.gold for t in reworded] == [t.gold for t in plain]
    fallback, bad = generate_tasks(synth_index, n=30, seed=8, paraphraser=lossy)
    assert bad.paraphrased == 0 and bad.paraphrase_fallbacks == 30
    assert [t.query for t in fallback] == [t.query for t in plain]


def test_llm_paraphrase_through_an_openai_compatible_stand_in(synth_index: SearchIndex) -> None:
    calls: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        prompt = httpx.Response(200, content=request.content).json()["messages"][0]["content"]
        original = prompt.rsplit("# Request\n", 1)[1].strip()
        calls.append(original)
        content = "Could you help? " + original.replace("Looking for", "I'm hunting for")
        choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
        body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice]}
        return httpx.Response(200, json=body)

    client = openai.OpenAI(
        base_url="http://stand-in/v1",
        api_key="none",
        http_client=httpx.Client(transport=httpx.MockTransport(handle)),
    )
    tasks, report = generate_tasks(synth_index, n=12, seed=2, paraphraser=Paraphraser(client, "m"))
    assert report.paraphrased == 12 and len(calls) == 12
    assert all(t.query.startswith("Could you help? ") and not missing_mentions(t) for t in tasks)
    voucher_tasks = [t for t in tasks if t.intent == "voucher"]
    assert voucher_tasks and all(
        "voucher" not in call.casefold() for call in calls
    )  # voucher block kept verbatim
