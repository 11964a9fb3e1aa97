"""The ``split`` stage: the train / eval split by pool group, and the leak audit.

Every exported task's leak cluster lands on one side, whole pool groups together, and an export
whose split the task audit fails is refused (``SplitLeakError``), with the violating tasks named.
A cluster's own side is a salted hash of its id (``split_of``), so it keeps its side as data grows.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping
from typing import Literal, cast

from sqlalchemy.orm import Session

from arena.audit import AuditReport, audit
from arena.pools import pool_groups
from arena.types import Pool, Task
from curation.config import CurationConfig
from curation.errors import SplitLeakError
from curation.funnel import Funnel
from curation.stages.stage import AXIS_B, MAIN, UNSCORED
from curation.workspace import Workspace
from storage.tasks import tasks_in_pool

Split = Literal["train", "eval"]
SPLITS: tuple[Split, ...] = ("train", "eval")

# Pools the audit sees for each side of the split (the audit compares pools).
SPLIT_POOL = {"train": "practice", "eval": "never_touch"}
MAX_REPORTED_VIOLATIONS = 5


def cluster_of(task: Task) -> str:
    """A task's leak cluster; a task never clustered is its own cluster."""
    return task.leak_cluster or f"solo-{task.task_id}"


def split_of(cluster: str, config: CurationConfig) -> Split:
    """Assign a leak cluster to train or eval by a salted hash (stable across runs and data growth)."""
    if config.split_by == "none" or config.eval_share <= 0:
        return "train"
    digest = hashlib.sha256(f"{config.split_salt}:{cluster}".encode()).digest()
    return "eval" if int.from_bytes(digest[:8], "big") / 2**64 < config.eval_share else "train"


def side_of(cluster: str, assigned: Mapping[str, Split], config: CurationConfig) -> Split:
    """The side of the split a leak cluster is on: as assigned by its pool group, else its own hash."""
    return assigned.get(cluster) or split_of(cluster, config)


def surviving_tasks(workspace: Workspace) -> set[str]:
    """The tasks of every kept trace (and of every trace of a side stream): the tasks exported."""
    rows = workspace.query(
        "SELECT DISTINCT task_id FROM traces LEFT JOIN decisions USING (seq) "
        "WHERE stream != 'main' OR decisions.state = 'kept'"
    )
    return {task_id for (task_id,) in rows}


def split_and_audit(
    session: Session, *, exported: list[Task], workspace: Workspace, funnel: Funnel, config: CurationConfig
) -> tuple[dict[str, Split], AuditReport]:
    """Put each exported task's cluster on one side, count, and refuse a split the audit fails.

    Returns:
        Each exported cluster's side, and the audit's report.

    Raises:
        SplitLeakError: the audit found a leak across the split.
    """
    assigned: dict[str, Split] = {}
    tasks: list[Task] = []
    clusters: dict[Split, set[str]] = {"train": set(), "eval": set()}
    # The clusterer links wording at Jaccard 0.5 and the audit fails a cross-split pair at 0.4, so
    # clusters are split by pool group (clusters joined at the audit's threshold, as pool
    # assignment does); a group of one is its cluster, on the side its own hash gives.
    for members in pool_groups(exported).values():
        group = [exported[i] for i in members]
        side = split_of(min(cluster_of(task) for task in group), config)
        for task in group:
            cluster = cluster_of(task)
            assigned[cluster] = side
            clusters[side].add(cluster)
            tasks.append(task.model_copy(update={"pool": SPLIT_POOL[side]}))
    per_side: Counter[Split] = Counter()
    for row in workspace.kept(MAIN):
        per_side[side_of(row.cluster, assigned, config)] += 1
    total = sum(per_side.values())
    funnel.entered("split", total)
    funnel.passed("split", total)
    funnel.splits = {
        side: {
            "traces": per_side[side],
            "tasks": sum(1 for t in tasks if t.pool == SPLIT_POOL[side]),
            "clusters": len(clusters[side]),
        }
        for side in ("train", "eval")
    }
    for stream in (AXIS_B, UNSCORED):
        for row in workspace.kept(stream):
            side = side_of(row.cluster, assigned, config)
            funnel.splits.setdefault(f"{stream}_{side}", {"traces": 0})["traces"] += 1
    protected = [
        task.model_copy(update={"pool": SPLIT_POOL["eval"]})
        for pool in config.protect_pools
        for task in tasks_in_pool(session, pool=cast(Pool, pool))
    ]
    report = audit([*tasks, *protected])
    funnel.audit = {
        "ok": report.ok,
        "tasks": len(tasks),
        "protected_tasks": len(protected),
        "violations": report.violation_count,
        "near_misses": report.near_miss_count,
    }
    funnel.stages["split"].notes = {"audit_ok": report.ok}
    if not report.ok:
        raise SplitLeakError(_leak_message(report))
    return assigned, report


def _leak_message(report: AuditReport) -> str:
    shown = "; ".join(
        f"{v.rule} ({v.detail[:60]}): "
        + " / ".join(f"{t} [{p}]" for t, p in zip(v.task_ids, v.pools, strict=False))
        for v in report.violations[:MAX_REPORTED_VIOLATIONS]
    )
    pools = ", ".join(f"{pool}={side}" for side, pool in SPLIT_POOL.items())
    return (
        f"export refused: the train / eval split leaks ({report.violation_count} audit violations; "
        f"pools in the audit: {pools}, protected pools count as eval): {shown}. "
        "Tasks linked by these rules must share a leak cluster: re-cluster them (arena tasks cluster) "
        "and curate again."
    )
