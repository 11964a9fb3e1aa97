"""Leak audit across pools, run before any export and by ``arena tasks audit``.

Violations (the audit fails):

- ``task``: the same task id in two pools;
- ``gold``: a gold product id used by tasks of two different pools;
- ``query``: a normalised query shared by tasks of two different pools;
- ``spec``: a canonical constraint spec (ids removed) shared across pools;
- ``cluster``: a leak cluster whose members sit in more than one pool;
- ``near_dup``: two same-intent tasks of different pools whose content-shingle Jaccard reaches
  ``near_dup_threshold`` (0.4 by default: looser than the clustering link at 0.5; the pool
  moves of ``arena.pools`` keep such pairs in one pool, so a violation means a file was
  edited, clustered apart, or moved by hand).

Near misses (reported, not failing): cross-pool pairs with Jaccard in
[``near_miss_threshold``, ``near_dup_threshold``), 0.3 by default. Candidates come from MinHash
LSH at 0.2 (the same LSH ``arena.pools.pool_groups`` uses, so pool moves and the audit agree);
near misses are best effort, violations are confirmed on the exact Jaccard.

World tasks are compared on their skeletons (``arena.clusters``: base gold ids, numbers masked,
world values out of the spec), so one task reused in two worlds in two pools is a leak.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from arena.clusters import (
    AUDIT_LSH_THRESHOLD,
    AUDIT_NEAR_DUP_THRESHOLD,
    NEAR_MISS_THRESHOLD,
    constraint_spec,
    gold_key,
    near_duplicate_links,
    query_key,
)
from arena.types import Task

# Keep reports readable on a badly leaking file; the counts stay exact.
MAX_FINDINGS = 1000


@dataclass(frozen=True)
class Finding:
    """One cross-pool link: the rule, what they share, the tasks and their pools."""

    rule: str
    detail: str
    task_ids: tuple[str, ...]
    pools: tuple[str, ...]
    similarity: float | None = None


@dataclass
class AuditReport:
    """The audit's outcome: ``ok`` when there is no violation; near misses never fail it."""

    tasks: int = 0
    pools: dict[str, int] = field(default_factory=dict)
    violation_count: int = 0
    near_miss_count: int = 0
    violations: list[Finding] = field(default_factory=list)
    near_misses: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether the audit found no violation."""
        return self.violation_count == 0

    def add(self, finding: Finding, *, near_miss: bool = False) -> None:
        """Record a finding (the first ``MAX_FINDINGS`` of each kind are kept)."""
        if near_miss:
            self.near_miss_count += 1
            if len(self.near_misses) < MAX_FINDINGS:
                self.near_misses.append(finding)
        else:
            self.violation_count += 1
            if len(self.violations) < MAX_FINDINGS:
                self.violations.append(finding)

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-able summary (with ``ok``)."""
        return {"ok": self.ok, **asdict(self)}


def _shared_keys(tasks: Sequence[Task], rule: str, keys: Iterator[tuple[int, str]]) -> Iterator[Finding]:
    members: dict[str, dict[str, int]] = defaultdict(dict)
    for index, key in keys:
        members[key].setdefault(tasks[index].pool, index)
    for key, by_pool in members.items():
        if len(by_pool) > 1:
            pools = tuple(sorted(by_pool))
            yield Finding(rule, key[:200], tuple(tasks[by_pool[p]].task_id for p in pools), pools)


def audit(
    tasks: Sequence[Task],
    *,
    near_dup_threshold: float = AUDIT_NEAR_DUP_THRESHOLD,
    near_miss_threshold: float = NEAR_MISS_THRESHOLD,
) -> AuditReport:
    """Check that no pool leaks into another (see the module docstring for the rules).

    Args:
        tasks: every task of every pool, together.
        near_dup_threshold: cross-pool Jaccard at or above which near-duplicate wording fails.
        near_miss_threshold: cross-pool Jaccard at or above which a pair is reported as a near miss.
    """
    report = AuditReport(tasks=len(tasks))
    for task in tasks:
        report.pools[task.pool] = report.pools.get(task.pool, 0) + 1
    enumerated = list(enumerate(tasks))
    for finding in _shared_keys(tasks, "task", ((i, t.task_id) for i, t in enumerated)):
        report.add(finding)
    gold = ((i, gold_key(t, item.product_id)) for i, t in enumerated for item in t.gold)
    for finding in _shared_keys(tasks, "gold", gold):
        report.add(finding)
    for finding in _shared_keys(tasks, "query", ((i, query_key(t)) for i, t in enumerated)):
        report.add(finding)
    for finding in _shared_keys(tasks, "spec", ((i, constraint_spec(t)) for i, t in enumerated)):
        report.add(finding)
    clustered = ((i, t.leak_cluster) for i, t in enumerated if t.leak_cluster)
    for finding in _shared_keys(tasks, "cluster", clustered):
        report.add(finding)
    lsh_at = min(AUDIT_LSH_THRESHOLD, near_miss_threshold)
    pools = [t.pool for t in tasks]
    cross = near_duplicate_links(
        tasks, near_miss_threshold, lsh_threshold=lsh_at, only=lambda i, j: pools[i] != pools[j]
    )
    for link in cross:
        a, b = tasks[link.a], tasks[link.b]
        finding = Finding(
            "near_dup",
            f"jaccard {link.similarity:.3f}",
            (a.task_id, b.task_id),
            (a.pool, b.pool),
            link.similarity,
        )
        report.add(finding, near_miss=link.similarity < near_dup_threshold)
    return report
