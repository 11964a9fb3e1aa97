"""Leakage across worlds: a task skeleton reused in another world is one leak cluster, one pool, audited."""

from __future__ import annotations

import re

import pytest

from arena.audit import audit
from arena.clusters import cluster_tasks, constraint_spec, find_links, gold_key, query_key
from arena.index import SearchIndex
from arena.pools import reconcile_pools
from arena.types import PriceConstraint, Task
from arena.world.compile import compile_world
from arena.world.types import WorldPack


@pytest.fixture(scope="module")
def pack(world_base: SearchIndex) -> WorldPack:
    return compile_world("leaks-test", world_base)


def _reused(task: Task, *, tag: str, factor: float) -> Task:
    """The same skeleton compiled in another world: that world's listing id, its prices and budget."""
    item = task.gold[0]
    price = tuple(
        PriceConstraint(
            mode=c.mode,
            low=None if c.low is None else round(c.low * factor, 2),
            high=None if c.high is None else round(c.high * factor, 2),
        )
        for c in item.price
    ) or (PriceConstraint(mode="less than", high=round(100 * factor, 2)),)
    gold = (
        item.model_copy(update={"product_id": f"{gold_key(task, item.product_id)}-{tag}n7", "price": price}),
    )
    query = re.sub(r"[0-9]+(?:\.[0-9]+)?", lambda m: f"{float(m.group()) * factor:.0f}", task.query)
    data = task.model_dump(exclude={"task_id", "gold", "query", "leak_cluster"})
    return Task.model_validate({**data, "gold": gold, "query": query})


def test_world_keys_drop_what_a_world_sets(pack: WorldPack) -> None:
    task = next(t.task for t in pack.tasks if t.basis == "cheapest_in_stock")
    other = _reused(task, tag="wabcdef", factor=1.37)
    assert other.task_id != task.task_id
    assert constraint_spec(other) == constraint_spec(task)
    assert gold_key(other, other.gold[0].product_id) == gold_key(task, task.gold[0].product_id)
    assert query_key(other) == query_key(task) and "#" in query_key(task)


def test_the_same_skeleton_in_two_worlds_is_one_leak_cluster(pack: WorldPack) -> None:
    tasks = [t.task for t in pack.tasks]
    reused = [_reused(t, tag="w0a1b2c", factor=0.8) for t in tasks if t.intent == "product"]
    clustered, _ = cluster_tasks([*tasks, *reused])
    cluster = {t.task_id: t.leak_cluster for t in clustered}
    for original, again in zip((t for t in tasks if t.intent == "product"), reused, strict=True):
        assert cluster[original.task_id] == cluster[again.task_id]
    rules = {link.rule for link in find_links([tasks[0], _reused(tasks[0], tag="w0a1b2c", factor=0.8)])}
    assert {"gold", "spec"} <= rules


def test_static_tasks_keep_their_keys() -> None:
    from tests.judging.factory import product_task

    task = product_task()
    assert task.source != "world"
    assert gold_key(task, "1001-wabcdefn1") == "1001-wabcdefn1"
    assert "5000" in query_key(task)
    priced = task.model_copy(update={"budget": 10.0})
    assert constraint_spec(priced) != constraint_spec(task.model_copy(update={"budget": 20.0}))


def test_pools_and_the_audit_work_across_worlds(pack: WorldPack) -> None:
    first = next(t.task for t in pack.tasks if t.basis == "cheapest_in_stock")
    again = _reused(first, tag="wfedcba", factor=1.2)
    served = first.model_copy(update={"pool": "retired"})
    report = audit([served, again])
    assert not report.ok and {"gold", "spec"} <= {f.rule for f in report.violations}
    clustered, _ = cluster_tasks([served, again])
    reconciled, moved = reconcile_pools(clustered)
    assert moved and {t.pool for t in reconciled} == {"retired"}  # served in one world: burned in every one
    assert audit(reconciled).ok
