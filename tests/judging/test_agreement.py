"""Agreement with ShoppingBench's scoring on its 900 public tasks, against the from-tasks catalog.

Every gold answer must succeed with every component at 1. Every answer with exactly one
constraint broken (the catalog's proven near-miss decoys in place of a gold product, an
unrelated title, an unknown id) must fail on exactly that component and nothing else.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

from arena.from_tasks import FromTasksCatalog, build_from_tasks
from arena.shoppingbench import load_shoppingbench
from arena.types import Product, Task
from judging.outcome import score_outcome
from judging.titles import LEXICAL, lexical_similarity
from judging.types import OutcomeEvidence

THRESHOLD, KNOWLEDGE_THRESHOLD = 0.5, 0.8


@pytest.fixture(scope="module")
def tasks(shoppingbench_files: list[Path]) -> list[Task]:
    return load_shoppingbench(shoppingbench_files)


@pytest.fixture(scope="module")
def catalog(tasks: list[Task]) -> FromTasksCatalog:
    return build_from_tasks(tasks, seed=3)


@pytest.fixture(scope="module")
def products(catalog: FromTasksCatalog) -> dict[str, Product]:
    return {p.product_id: p for p in catalog.products}


def score(task: Task, basket: Sequence[Product | str]) -> OutcomeEvidence:
    """Score a basket of products (or bare ids, which the catalog does not know)."""
    ids = [p.product_id if isinstance(p, Product) else p for p in basket]
    found = {p.product_id: p for p in basket if isinstance(p, Product)}
    return score_outcome(
        task,
        ids,
        found,
        matcher=LEXICAL,
        title_threshold=THRESHOLD,
        knowledge_title_threshold=KNOWLEDGE_THRESHOLD,
    )


def failures(result: OutcomeEvidence) -> set[str]:
    """Our failures in the catalog's notation (`arena.constraints.task_failures`)."""
    names: set[str] = set()
    for item in result.items:
        for failed in item.failed:
            if failed.startswith("title") or failed == "kw":
                key = failed.split("[")[0]
            elif failed.startswith("price["):
                key = "price:" + failed[len("price[") : -1]
            elif failed.startswith("sku_attrs:"):
                key = "pair:" + failed[len("sku_attrs:") :]
            else:
                key = failed
            names.add(f"{item.position}:{key}")
    if result.scores.shop == 0.0:
        names.add("shop")
    if result.scores.budget == 0.0:
        names.add("budget")
    return names


def test_all_900_tasks_are_loaded(tasks: list[Task]) -> None:
    assert len(tasks) == 900
    assert Counter(t.intent for t in tasks) == {"product": 250, "shop": 250, "voucher": 250, "knowledge": 150}


def test_every_gold_answer_succeeds(tasks: list[Task], products: dict[str, Product]) -> None:
    bad = []
    for task in tasks:
        result = score(task, [products[item.product_id] for item in task.gold])
        s = result.scores
        full = (
            (s.rule, s.gt, s.product) == (1.0, 1.0, 1.0) and s.shop in (None, 1.0) and s.budget in (None, 1.0)
        )
        if not (result.success and full) or (s.shop is None) != (task.intent != "shop"):
            bad.append((task.task_id, task.intent, s))
    assert bad == []


def test_every_decoy_fails_on_exactly_its_constraint(
    tasks: list[Task], catalog: FromTasksCatalog, products: dict[str, Product]
) -> None:
    by_id = {t.task_id: t for t in tasks}
    checked: Counter[str] = Counter()
    wrong = []
    for decoy in catalog.decoys:
        if decoy.kind == "title":
            continue  # the catalog's lookalikes keep most words: see the test below
        task = by_id[decoy.task_id]
        basket: list[Product | str] = [products[item.product_id] for item in task.gold]
        basket[decoy.item] = products[decoy.product_id]
        result = score(task, basket)
        if result.success or failures(result) != {decoy.breaks}:
            wrong.append((decoy, sorted(failures(result))))
        checked[decoy.kind] += 1
    assert wrong == []
    assert set(checked) == {"sku", "attribute", "service", "price", "budget", "shop"}
    assert sum(checked.values()) > 4000


def test_lookalike_titles_follow_the_similarity_rule(
    tasks: list[Task], catalog: FromTasksCatalog, products: dict[str, Product]
) -> None:
    # The catalog's title decoys drop two reference words and add two: ShoppingBench's
    # embedding rule (and ours) may still call them similar. Ours must fail exactly those
    # below the threshold, on the title and nothing else.
    by_id = {t.task_id: t for t in tasks}
    outcomes: Counter[str] = Counter()
    for decoy in (d for d in catalog.decoys if d.kind == "title"):
        task = by_id[decoy.task_id]
        basket: list[Product | str] = [products[item.product_id] for item in task.gold]
        lookalike = products[decoy.product_id]
        basket[decoy.item] = lookalike
        result = score(task, basket)
        threshold = KNOWLEDGE_THRESHOLD if task.intent == "knowledge" else THRESHOLD
        similar = lexical_similarity(lookalike.title, task.gold[decoy.item].titles[0]) >= threshold
        expected = set() if similar else {f"{decoy.item}:title"}
        keyword = (task.knowledge_attribute or "").lower()
        if (
            task.intent == "knowledge"
            and keyword not in f"{lookalike.title}\n{lookalike.description}".lower()
        ):
            expected.add(f"{decoy.item}:kw")  # the web rule's key-attribute check
        assert failures(result) == expected, decoy
        outcomes["accepted" if similar else "rejected"] += 1
    assert outcomes["rejected"] > 0 and outcomes["accepted"] > 0


def test_an_unrelated_title_fails_on_title_only(tasks: list[Task], products: dict[str, Product]) -> None:
    titles = sorted({p.title for p in products.values()})
    for task in tasks:
        for index, item in enumerate(task.gold):
            gold = products[item.product_id]
            other = next(t for t in titles if lexical_similarity(t, item.titles[0]) == 0.0)
            renamed = gold.model_copy(update={"product_id": f"x-{gold.product_id}", "title": other})
            basket: list[Product | str] = [products[i.product_id] for i in task.gold]
            basket[index] = renamed
            result = score(task, basket)
            expected = {f"{index}:title"}
            keyword = (task.knowledge_attribute or "").lower()
            if task.intent == "knowledge" and keyword not in f"{other}\n{gold.description}".lower():
                expected.add(f"{index}:kw")  # the keyword lived in the title that was replaced
            assert not result.success
            assert failures(result) == expected, (task.task_id, index)


def test_an_unknown_id_fails_product_and_its_position(
    tasks: list[Task], products: dict[str, Product]
) -> None:
    for task in tasks:
        basket: list[Product | str] = [products[item.product_id] for item in task.gold]
        basket[-1] = "no-such-id"
        result = score(task, basket)
        n = len(task.gold)
        assert result.scores.product == pytest.approx((n - 1) / n)
        expected = {f"{n - 1}:missing"} | ({"shop"} if task.intent == "shop" else set())
        expected |= {"budget"} if task.intent == "voucher" else set()
        assert not result.success and failures(result) == expected
