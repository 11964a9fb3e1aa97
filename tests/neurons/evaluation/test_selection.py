"""Task selection for an evaluation: task files, the pool filter, refusal of tasks a training export holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena.types import Task
from neurons.evaluation.selection import (
    SelectionError,
    cluster_of,
    load_task_files,
    read_train_manifest,
    select_tasks,
)
from tests.neurons.eval_world import eval_tasks, write_tasks


def _manifest(tmp_path: Path, body: object) -> Path:
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(body))
    return path


def test_the_curation_manifest_shape_refuses_every_split(tmp_path: Path) -> None:
    tasks = eval_tasks()
    body = {
        "schema": "arena.export-manifest/1",
        "splits": {
            "train": {"tasks": [], "clusters": ["lc-pegasus"], "episodes": []},
            "eval": {"tasks": [tasks["cymbal"].task_id], "clusters": [], "episodes": []},
        },
    }
    manifest = read_train_manifest(_manifest(tmp_path, body))
    selection = select_tasks(list(tasks.values()), manifest=manifest)
    assert selection.dropped_leak == 2
    assert {t.task_id for t in selection.tasks} == {tasks["chili"].task_id, tasks["calculator"].task_id}
    assert selection.leaked_clusters == ["lc-cymbal", "lc-pegasus"]


def test_flat_lists_and_the_export_directory_are_read(tmp_path: Path) -> None:
    tasks = eval_tasks()
    _manifest(tmp_path, {"leak_clusters": ["lc-chili"], "task_ids": []})
    manifest = read_train_manifest(tmp_path)  # the directory holding manifest.json
    assert manifest.touches(tasks["chili"]) and not manifest.touches(tasks["cymbal"])


def test_an_unclustered_task_is_refused_by_its_solo_cluster(tmp_path: Path) -> None:
    task = eval_tasks()["chili"].model_copy(update={"leak_cluster": None})
    assert cluster_of(task) == f"solo-{task.task_id}"
    manifest = read_train_manifest(
        _manifest(tmp_path, {"splits": {"train": {"clusters": [cluster_of(task)]}}})
    )
    assert manifest.touches(task)


@pytest.mark.parametrize(
    "body",
    [
        {"rows": 3},
        {"splits": {"train": {"episodes": ["ep-1"]}}},
        [1, 2],
        {"splits": {"train": {"tasks": [1]}}},
    ],
)
def test_a_manifest_without_tasks_or_clusters_is_refused(tmp_path: Path, body: object) -> None:
    with pytest.raises(SelectionError):
        read_train_manifest(_manifest(tmp_path, body))


def test_a_missing_manifest_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SelectionError):
        read_train_manifest(tmp_path / "nope.json")


def test_auto_pool_takes_never_touch_when_present_and_warns_otherwise() -> None:
    tasks = list(eval_tasks().values())
    mixed = [tasks[0].model_copy(update={"pool": "held_out"}), *tasks[1:]]
    selection = select_tasks(mixed)
    assert selection.pool == "never_touch" and selection.dropped_pool == 1 and not selection.warnings
    plain = [t.model_copy(update={"pool": "held_out"}) for t in tasks]
    selection = select_tasks(plain)
    assert selection.pool == "all" and len(selection.tasks) == 4 and selection.warnings
    assert len(select_tasks(mixed, pool="held_out").tasks) == 1


def test_limit_is_a_seeded_subset() -> None:
    tasks = list(eval_tasks().values())
    first = select_tasks(tasks, limit=2, seed=1)
    assert len(first.tasks) == 2 and first.dropped_limit == 2
    assert [t.task_id for t in select_tasks(tasks, limit=2, seed=1).tasks] == [t.task_id for t in first.tasks]


def test_nothing_left_and_unknown_pools_are_errors() -> None:
    tasks = list(eval_tasks().values())
    with pytest.raises(SelectionError, match="unknown pool"):
        select_tasks(tasks, pool="everything")
    with pytest.raises(SelectionError, match="no task left"):
        select_tasks(tasks, pool="practice")


def test_our_files_and_shoppingbench_files_both_load(tmp_path: Path, shoppingbench_files: list[Path]) -> None:
    ours = write_tasks(tmp_path / "tasks.jsonl", eval_tasks())
    product = next(p for p in shoppingbench_files if "product" in p.name)
    tasks, report = load_task_files([ours, product])
    assert report.bad == 0
    assert sum(1 for t in tasks if t.leak_cluster and t.leak_cluster.startswith("lc-")) >= 4
    assert len(tasks) > 4 and all(isinstance(t, Task) for t in tasks)
    with pytest.raises(SelectionError):
        load_task_files([tmp_path / "missing.jsonl"])
