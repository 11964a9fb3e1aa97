"""Curation's result and its last stage: the train / eval split by pool group, and the leak audit.

Stage 8 of the funnel (``curation.curate``): every exported task's leak cluster lands on one side,
whole pool groups together, and an export whose split the task audit fails is refused
(``SplitLeakError``), with the violating tasks named.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import cast

from sqlalchemy.orm import Session

from arena.audit import AuditReport, audit
from arena.pools import pool_groups
from arena.types import Pool, Task
from curation.errors import SplitLeakError
from curation.funnel import Funnel
from curation.gates import AXIS_B, MAIN, UNSCORED, CurationConfig, Split, cluster_of, split_of
from curation.workspace import Workspace
from storage.tasks import tasks_in_pool

# Pools the audit sees for each side of the split (the audit compares pools).
SPLIT_POOL = {"train": "practice", "eval": "never_touch"}
MAX_REPORTED_VIOLATIONS = 5


@dataclass
class Curation:
    """A finished curation run: its workspace (surviving traces), observed tasks, funnel, split and audit."""

    config: CurationConfig
    workspace: Workspace
    funnel: Funnel
    tasks: dict[str, Task] = field(default_factory=dict)  # every observed task, by id
    # The world each observed world task ran on ({"world_id", "pack_hash"}); static tasks are absent.
    worlds: dict[str, dict[str, str | None]] = field(default_factory=dict)
    cluster_split: dict[str, Split] = field(default_factory=dict)
    audit: AuditReport | None = None

    def split(self, cluster: str) -> Split:
        """The side of the split a leak cluster is on."""
        return self.cluster_split.get(cluster) or split_of(cluster, self.config)


def surviving_tasks(workspace: Workspace) -> set[str]:
    """The tasks of every kept trace (and of every trace of a side stream): the tasks exported."""
    rows = workspace.query(
        "SELECT DISTINCT task_id FROM traces LEFT JOIN decisions USING (seq) "
        "WHERE stream != 'main' OR decisions.state = 'kept'"
    )
    return {task_id for (task_id,) in rows}


def split_and_audit(session: Session, curation: Curation, task_ids: set[str]) -> None:
    """Stage 8: put each exported task's cluster on one side, count, and refuse a split the audit fails."""
    funnel, workspace, config = curation.funnel, curation.workspace, curation.config
    tasks: list[Task] = []
    clusters: dict[Split, set[str]] = {"train": set(), "eval": set()}
    exported = [curation.tasks[task_id] for task_id in sorted(task_ids)]
    # The clusterer links wording at Jaccard 0.5 and the audit fails a cross-split pair at 0.4, so
    # clusters are split by pool group (clusters joined at the audit's threshold, as pool
    # assignment does); a group of one is its cluster, on the side its own hash gives.
    for members in pool_groups(exported).values():
        group = [exported[i] for i in members]
        side = split_of(min(cluster_of(task) for task in group), config)
        for task in group:
            cluster = cluster_of(task)
            curation.cluster_split[cluster] = side
            clusters[side].add(cluster)
            tasks.append(task.model_copy(update={"pool": SPLIT_POOL[side]}))
    per_side: Counter[Split] = Counter()
    for row in workspace.kept(MAIN):
        per_side[curation.split(row.cluster)] += 1
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
            funnel.splits.setdefault(f"{stream}_{curation.split(row.cluster)}", {"traces": 0})["traces"] += 1
    protected = [
        task.model_copy(update={"pool": SPLIT_POOL["eval"]})
        for pool in config.protect_pools
        for task in tasks_in_pool(session, pool=cast(Pool, pool))
    ]
    report = audit([*tasks, *protected])
    curation.audit = report
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
