from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from arena.audit import audit
from arena.clusters import assign_clusters
from arena.generate import generate_tasks
from arena.pools import assign_pools
from arena.rotation import draw_round, retire
from arena.types import GoldItem, Pool, Task

if TYPE_CHECKING:
    from arena.index import SearchIndex


def task(query: str, pid: str, pool: Pool = "held_out", title: str | None = None) -> Task:
    gold = (GoldItem(product_id=pid, titles=(title or f"title of {pid}",)),)
    return Task(intent="product", query=query, gold=gold, pool=pool)


def clean_corpus() -> list[Task]:
    queries = [
        "Show me a stainless steel kettle from LazMall",
        "I want a wooden chess board under 300 pesos",
        "Looking for a waterproof phone case for iPhone 14",
        "Need a yoga mat, thick, purple",
        "Find a mechanical keyboard with blue switches",
        "Any ceramic flower vase for the living room?",
    ]
    tasks = assign_clusters([task(q, f"p{i}") for i, q in enumerate(queries)])
    return assign_pools(tasks, practice=0.34, seed="x")


def rules(tasks: list[Task]) -> set[str]:
    return {f.rule for f in audit(tasks).violations}


def test_clean_pools_pass() -> None:
    tasks = clean_corpus()
    assert {t.pool for t in tasks} == {"practice", "held_out"}
    report = audit(tasks)
    assert report.ok and report.violation_count == 0
    assert json.loads(json.dumps(report.to_json()))["ok"] is True


def test_planted_shared_gold_product_fails() -> None:
    tasks = clean_corpus()
    practice = next(t for t in tasks if t.pool == "practice")
    leak = task("Totally different words about garden hoses", practice.gold[0].product_id, title="Hose")
    report = audit([*tasks, leak])
    assert not report.ok
    assert {f.rule for f in report.violations} == {"gold"}
    finding = report.violations[0]
    assert set(finding.pools) == {"practice", "held_out"} and leak.task_id in finding.task_ids


def test_planted_same_query_fails() -> None:
    tasks = clean_corpus()
    practice = next(t for t in tasks if t.pool == "practice")
    assert "query" in rules([*tasks, task(practice.query.upper() + "!!", "p-new", title="Other")])


def test_planted_same_spec_fails() -> None:
    tasks = clean_corpus()
    practice = next(t for t in tasks if t.pool == "practice")
    twin = task("Garden hose, 20 metres, green", "p-new", title=practice.gold[0].titles[0])
    assert rules([*tasks, twin]) == {"spec"}


def test_planted_near_duplicate_fails_at_the_looser_threshold() -> None:
    tasks = [
        task("Show me red cotton t-shirts with free shipping priced under 200 pesos", "p1", "practice"),
        task(
            "Red cotton t-shirt, ships free, under 200, slim fit, crew neck, long sleeves", "p2", "held_out"
        ),
        task("A wooden chess board with folding hinges", "p3", "held_out"),
    ]
    report = audit(tasks)
    assert [f.rule for f in report.violations] == ["near_dup"]
    similarity = report.violations[0].similarity
    assert similarity is not None and 0.4 <= similarity < 0.5  # below the clustering link, above the audit's


def test_near_misses_are_reported_without_failing() -> None:
    tasks = [
        task("red cotton shirt with a slim fit, pocket, long sleeves", "p1", "practice"),
        task("red cotton shirt, long sleeves, loose fit, navy collar", "p2", "held_out"),
    ]
    report = audit(tasks)
    assert report.ok
    assert report.near_miss_count == 1 and report.near_misses[0].rule == "near_dup"


def test_a_cluster_spanning_pools_fails() -> None:
    a, b = clean_corpus()[:2]
    split = [
        a.model_copy(update={"leak_cluster": "lc-x", "pool": "practice"}),
        b.model_copy(update={"leak_cluster": "lc-x"}),
    ]
    assert "cluster" in rules(split)


def test_the_same_task_in_two_pools_fails() -> None:
    a = clean_corpus()[0]
    assert "task" in rules(
        [a.model_copy(update={"pool": "retired"}), a.model_copy(update={"pool": "never_touch"})]
    )


@pytest.mark.slow  # heavy (tens of seconds on 2 cores): `make test-slow`
def test_generated_tasks_pass_the_audit_through_pool_moves_and_rotation(synth_index: SearchIndex) -> None:
    tasks, _ = generate_tasks(synth_index, n=1500, seed=17)
    tasks = assign_pools(assign_clusters(tasks), practice=0.2, never_touch=0.2, seed="audit")
    report = audit(tasks)
    assert report.ok, report.violations[:3]
    for round_number in range(3):
        served = draw_round(tasks, secret=b"k", round_number=round_number, n=40)
        tasks = retire(tasks, [t.task_id for t in served])
        assert audit(tasks).ok
    assert sum(t.pool == "retired" for t in tasks) >= 120
