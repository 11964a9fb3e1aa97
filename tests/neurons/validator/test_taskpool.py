"""The task pool: refilled deterministically and leak-free, drawn per round, burned with its pool groups."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import REGISTRY

from arena.audit import audit
from arena.index import SearchIndex
from arena.types import Task
from neurons.validator.settings import PoolConfig
from neurons.validator.taskpool import all_tasks, burn, generation_seed, open_and_burn, replenish
from storage import repository
from tests.neurons.rig import make_sessions
from tests.storage.factories import make_task

ITEMS = (
    "an enamel teapot", "a folding bicycle helmet", "wireless earbuds for running", "a cast iron skillet",
    "a children's raincoat", "an ergonomic office chair", "a ceramic plant pot", "a leather wallet for men",
    "a stainless water bottle", "a yoga mat with strap",
)  # fmt: skip


def distinct_tasks() -> list[Task]:
    """Ten tasks of distinct wording and gold, each its own leak cluster (no near duplicates)."""
    return [
        Task.model_validate(
            make_task(i).model_dump()
            | {"query": f"Find me {item}, please.", "leak_cluster": None, "task_id": ""}
        )
        for i, item in enumerate(ITEMS)
    ]


CONFIG = PoolConfig(min_held_out=10, batch=16, practice_share=0.25, never_touch_share=0.1)


def test_an_empty_store_is_stocked_and_the_audit_passes(tmp_path: Path, synth_index: SearchIndex) -> None:
    sessions = make_sessions(tmp_path)
    with sessions() as session:
        report = replenish(session, synth_index, secret=b"s" * 32, config=CONFIG)
        tasks = all_tasks(session)
    assert report.generated == len(tasks) == 16
    assert report.pools["practice"] >= 3 and report.pools["never_touch"] >= 1
    assert report.pools["held_out"] == sum(t.pool == "held_out" for t in tasks)
    assert all(t.leak_cluster for t in tasks)
    assert audit(tasks).ok
    assert REGISTRY.get_sample_value("arena_task_pool_size", {"pool": "held_out"}) == report.pools["held_out"]


def test_refills_are_deterministic_from_the_store_and_the_secret(
    tmp_path: Path, synth_index: SearchIndex
) -> None:
    def stocked(name: str, secret: bytes) -> set[str]:
        sessions = make_sessions(tmp_path / name)
        with sessions() as session:
            replenish(session, synth_index, secret=secret, config=CONFIG)
            return {t.task_id for t in all_tasks(session)}

    assert stocked("a", b"s" * 32) == stocked("b", b"s" * 32)
    assert stocked("c", b"t" * 32).isdisjoint(stocked("a", b"s" * 32))
    assert generation_seed(b"s" * 32, 0) != generation_seed(b"s" * 32, 16)


def test_a_full_pool_is_left_alone_and_a_low_one_refilled_without_reusing_gold(
    tmp_path: Path, synth_index: SearchIndex
) -> None:
    sessions = make_sessions(tmp_path)
    with sessions() as session:
        replenish(session, synth_index, secret=b"s" * 32, config=CONFIG)
        assert replenish(session, synth_index, secret=b"s" * 32, config=CONFIG).generated == 0
        first = all_tasks(session)
        held = [t.task_id for t in first if t.pool == "held_out"]
        burn(session, task_ids=held)  # a round served them all
        report = replenish(session, synth_index, secret=b"s" * 32, config=CONFIG)
        second = all_tasks(session)
    assert report.generated == 16 and len(second) == 32
    new = [t for t in second if t.task_id not in {f.task_id for f in first}]
    old_gold = {item.product_id for t in first for item in t.gold}
    assert old_gold.isdisjoint(item.product_id for t in new for item in t.gold)
    assert {t.task_id for t in second if t.pool == "retired"} >= set(held)
    assert audit(second).ok


def test_burn_retires_the_whole_pool_group_and_marks_served(tmp_path: Path) -> None:
    sessions = make_sessions(tmp_path)
    partner_a, partner_b = make_task(1), make_task(38)  # they share leak cluster c-1
    wording = "Looking for an enamel teapot, under 80 pesos, that ships free; black please, size L."
    alone = Task.model_validate(make_task(2).model_dump() | {"query": wording, "task_id": ""})
    assert partner_a.leak_cluster == partner_b.leak_cluster != alone.leak_cluster
    with sessions() as session:
        repository.save_tasks(session, tasks=[partner_a, partner_b, alone])
        assert burn(session, task_ids=[partner_a.task_id]) == 2
        stored = repository.get_tasks(session, task_ids=[partner_a.task_id, partner_b.task_id, alone.task_id])
        assert burn(session, task_ids=[partner_a.task_id]) == 1  # idempotent: already retired
    assert stored[partner_a.task_id].pool == stored[partner_b.task_id].pool == "retired"
    assert stored[alone.task_id].pool == "held_out"


def test_a_round_draw_is_recorded_and_burned_before_anything_is_sent(tmp_path: Path) -> None:
    sessions = make_sessions(tmp_path)
    with sessions() as session:
        repository.save_tasks(session, tasks=distinct_tasks())
        drawn = open_and_burn(session, round_id=4, secret=b"k" * 32, n=3, validator_hotkey="5V", block=9)
        record = repository.get_round(session, round_id=4)
        assert record is not None and record.task_ids == tuple(t.task_id for t in drawn)
        assert record.block == 9 and record.closed_at is None
        held = {t.task_id for t in repository.tasks_in_pool(session, pool="held_out")}
        assert held.isdisjoint(record.task_ids)
        assert open_and_burn(session, round_id=5, secret=b"k" * 32, n=20, validator_hotkey="5V", block=10)
        assert repository.tasks_in_pool(session, pool="held_out") == []
        assert (
            open_and_burn(session, round_id=6, secret=b"k" * 32, n=3, validator_hotkey="5V", block=11) == []
        )
        assert repository.get_round(session, round_id=6) is None
