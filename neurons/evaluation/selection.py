"""Which tasks an evaluation may use: task files, the pool filter, and refusal of tasks a model trained on.

A task is refused when its leak cluster (or, for a task never clustered, the task itself) appears
in a training export's audit manifest: the model may have seen that task, or one that shares its
gold products, query or wording. Curation names an unclustered task's cluster ``solo-<task_id>``,
so both the cluster and the task id are checked.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.catalog import open_text
from arena.errors import ArenaError
from arena.interchange import import_tasks
from arena.tasks import TaskLoadReport, iter_tasks
from arena.types import POOLS, Task
from neurons.errors import NeuronError

logger = logging.getLogger(__name__)

AUTO_POOL = "auto"
ALL_POOLS = "all"
POOL_CHOICES = (AUTO_POOL, ALL_POOLS, *POOLS)
MANIFEST_NAME = "manifest.json"
_CLUSTER_KEYS = ("leak_clusters", "clusters")
_TASK_KEYS = ("task_ids", "tasks")


class SelectionError(NeuronError):
    """Tasks or a manifest cannot be used (unreadable, wrong shape, nothing left); the CLI exits 2."""


@dataclass(frozen=True)
class TrainManifest:
    """What a training export contains: task ids and leak clusters, over all of its splits."""

    path: Path
    task_ids: frozenset[str]
    clusters: frozenset[str]

    def touches(self, task: Task) -> bool:
        """Whether ``task`` or its leak cluster is in the export."""
        return task.task_id in self.task_ids or cluster_of(task) in self.clusters


@dataclass
class Selection:
    """The tasks chosen for a run and how many each filter dropped."""

    tasks: list[Task]
    loaded: int
    pool: str
    dropped_pool: int = 0
    dropped_leak: int = 0
    dropped_limit: int = 0
    leaked_clusters: list[str] = field(default_factory=list)
    bad_rows: int = 0
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The selection as JSON (for results.json)."""
        return {
            "loaded": self.loaded,
            "pool": self.pool,
            "dropped_pool": self.dropped_pool,
            "dropped_leak": self.dropped_leak,
            "dropped_limit": self.dropped_limit,
            "leaked_clusters": self.leaked_clusters[:50],
            "bad_rows": self.bad_rows,
            "evaluated": len(self.tasks),
            "warnings": self.warnings,
        }


def cluster_of(task: Task) -> str:
    """A task's leak cluster as curation names it (an unclustered task is its own cluster)."""
    return task.leak_cluster or f"solo-{task.task_id}"


def _is_shoppingbench(path: Path) -> bool:
    """Whether the file's first row is a ShoppingBench row (it has ``query`` and ``reward``, no ``gold``)."""
    with open_text(path) as handle:
        for line in handle:
            if line.strip():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    return False
                return isinstance(row, dict) and "reward" in row and "gold" not in row
    return False


def load_task_files(paths: Sequence[Path]) -> tuple[list[Task], TaskLoadReport]:
    """Load our task JSONL files and ShoppingBench task files (told apart by their first row).

    Raises:
        SelectionError: a file is missing or unreadable.
    """
    report = TaskLoadReport()
    tasks: dict[str, Task] = {}
    try:
        for path in paths:
            if not path.is_file():
                raise SelectionError(f"task file not found: {path}")
            if _is_shoppingbench(path):
                loaded: Iterable[Task] = import_tasks("shoppingbench", [path], report)
            else:
                loaded = iter_tasks([path], report)
            for task in loaded:
                tasks.setdefault(task.task_id, task)
    except (ArenaError, OSError, UnicodeDecodeError, ValueError) as exc:
        raise SelectionError(f"cannot read tasks: {exc}") from exc
    return list(tasks.values()), report


def _strings(value: Any, where: str) -> set[str]:
    if value is None:
        return set()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SelectionError(f"manifest field {where} must be a list of strings")
    return set(value)


def read_train_manifest(path: Path) -> TrainManifest:
    """Read a training export's audit manifest (the file, or the export directory holding ``manifest.json``).

    Accepted shape: curation's ``arena.export-manifest/1``, ``{"splits": {<split>: {"tasks":
    [...], "clusters": [...], "episodes": [...]}, ...}}`` (``task_ids`` and ``leak_clusters``
    are accepted as key names too), or the two lists at the top level. Every split counts,
    ``eval`` included: whatever a training export holds may have been trained or selected on.

    Raises:
        SelectionError: the file is missing, not JSON, or holds neither task ids nor clusters.
    """
    file = path / MANIFEST_NAME if path.is_dir() else path
    try:
        body = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise SelectionError(f"cannot read the training manifest {file}: {exc}") from exc
    if not isinstance(body, dict):
        raise SelectionError(f"the training manifest {file} is not a JSON object")
    sections: list[tuple[str, dict[str, Any]]] = [("", body)]
    splits = body.get("splits")
    if isinstance(splits, dict):
        sections += [(f"splits.{name}.", part) for name, part in splits.items() if isinstance(part, dict)]
    task_ids: set[str] = set()
    clusters: set[str] = set()
    for prefix, section in sections:
        for key in _TASK_KEYS:
            task_ids |= _strings(section.get(key), prefix + key)
        for key in _CLUSTER_KEYS:
            clusters |= _strings(section.get(key), prefix + key)
    if not task_ids and not clusters:
        raise SelectionError(
            f"the training manifest {file} names no task ids or leak clusters "
            "(expected splits.<split>.task_ids / leak_clusters); refusing to guess"
        )
    return TrainManifest(path=file, task_ids=frozenset(task_ids), clusters=frozenset(clusters))


def _order_key(task: Task, seed: int) -> str:
    return hashlib.sha256(f"{seed}:{task.task_id}".encode()).hexdigest()


def select_tasks(
    tasks: Sequence[Task],
    *,
    pool: str = AUTO_POOL,
    manifest: TrainManifest | None = None,
    limit: int | None = None,
    seed: int = 0,
) -> Selection:
    """Filter tasks by pool, refuse those a training export touched, order them, apply a limit.

    Args:
        tasks: every loaded task.
        pool: a pool name, ``all``, or ``auto`` (``never_touch`` when any task is in it, else all).
        manifest: the training export's manifest, or None.
        limit: keep at most this many tasks (the first in a seeded order, so a limit is a random subset).
        seed: the order's seed.

    Raises:
        SelectionError: an unknown pool, or no task left.
    """
    if pool not in POOL_CHOICES:
        raise SelectionError(f"unknown pool {pool!r}: expected one of {', '.join(POOL_CHOICES)}")
    selection = Selection(tasks=[], loaded=len(tasks), pool=pool)
    chosen = list(tasks)
    if pool == AUTO_POOL:
        has_reserved = any(t.pool == "never_touch" for t in tasks)
        selection.pool = "never_touch" if has_reserved else ALL_POOLS
        if not has_reserved:
            selection.warnings.append(
                "no task is in the never_touch pool: evaluating every task; the numbers are held out "
                "only if these tasks were never served to miners nor trained on"
            )
    if selection.pool != ALL_POOLS:
        chosen = [t for t in chosen if t.pool == selection.pool]
        selection.dropped_pool = len(tasks) - len(chosen)
    if manifest is not None:
        leaked = [t for t in chosen if manifest.touches(t)]
        selection.dropped_leak = len(leaked)
        selection.leaked_clusters = sorted({cluster_of(t) for t in leaked})
        chosen = [t for t in chosen if not manifest.touches(t)]
    chosen.sort(key=lambda t: _order_key(t, seed))
    if limit is not None and len(chosen) > limit:
        selection.dropped_limit = len(chosen) - limit
        chosen = chosen[:limit]
    if not chosen:
        raise SelectionError(
            f"no task left to evaluate (loaded {len(tasks)}, pool {selection.pool} dropped "
            f"{selection.dropped_pool}, the training manifest dropped {selection.dropped_leak})"
        )
    selection.tasks = chosen
    logger.info(
        "eval_selection loaded=%d pool=%s dropped_pool=%d dropped_leak=%d evaluated=%d",
        len(tasks),
        selection.pool,
        selection.dropped_pool,
        selection.dropped_leak,
        len(chosen),
    )
    return selection
