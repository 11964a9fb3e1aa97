"""Task pools, moved a whole leak cluster at a time.

- ``practice``: public; may be published with answers (agent developers train on it).
- ``held_out``: served in rounds; never published before its round closes.
- ``retired``: served or leaked; never served again and never used as evaluation data.
- ``never_touch``: a reserved evaluation set; never served, never published.

Moves only go one way: held_out -> practice / never_touch / retired; practice and never_touch
-> retired; nothing leaves retired. A task without a leak cluster is its own cluster.

Automatic moves (``assign_pools``, ``reconcile_pools``, and ``arena.rotation.retire``) move
*pool groups*: a leak cluster together with every cluster that near-duplicates it at the
audit's looser threshold (0.4, ``arena.clusters.AUDIT_NEAR_DUP_THRESHOLD``). So they never
leave a pair that the audit would flag in two pools. ``move_clusters`` moves exactly the
clusters it is given (an operator's explicit choice; the audit checks the result).

When clustering merges tasks of different pools into one group, ``reconcile_pools`` puts the
whole group in one pool, the safest: any retired member, or practice (public) members mixed
with held_out / never_touch ones, make it retired (its answers are out); never_touch mixed
with held_out makes it never_touch (the reserve wins over serving).
"""

from __future__ import annotations

import hashlib
import logging
from collections import defaultdict
from collections.abc import Iterable, Sequence

from arena.clusters import (
    AUDIT_LSH_THRESHOLD,
    AUDIT_NEAR_DUP_THRESHOLD,
    UnionFind,
    gold_key,
    near_duplicate_links,
)
from arena.errors import InvalidTask
from arena.types import Pool, Task

logger = logging.getLogger(__name__)

ALLOWED_MOVES: dict[Pool, frozenset[Pool]] = {
    "held_out": frozenset({"practice", "never_touch", "retired"}),
    "practice": frozenset({"retired"}),
    "never_touch": frozenset({"retired"}),
    "retired": frozenset(),
}


def cluster_key(task: Task) -> str:
    """Return the task's leak cluster, or its own id when it has none."""
    return task.leak_cluster or task.task_id


def clusters_of(tasks: Sequence[Task]) -> dict[str, list[int]]:
    """Group task positions by leak cluster (insertion order)."""
    groups: dict[str, list[int]] = defaultdict(list)
    for index, task in enumerate(tasks):
        groups[cluster_key(task)].append(index)
    return dict(groups)


def pool_groups(
    tasks: Sequence[Task], *, near_dup_threshold: float = AUDIT_NEAR_DUP_THRESHOLD
) -> dict[str, list[int]]:
    """Group task positions into pool groups: leak clusters joined by near-duplicate and gold links.

    Each group is keyed by the smallest cluster key among its members.
    """
    sets = UnionFind(len(tasks))
    for members in clusters_of(tasks).values():
        for i in members[1:]:
            sets.union(members[0], i)
    # Candidates come from the same LSH as the audit's, so every pair the audit can flag is seen
    # here too: LSH recall can never leave a flagged pair split across pools.
    lsh_at = min(AUDIT_LSH_THRESHOLD, near_dup_threshold)
    for link in near_duplicate_links(tasks, near_dup_threshold, lsh_threshold=lsh_at):
        sets.union(link.a, link.b)
    # The audit's gold rule: tasks sharing a gold product may not straddle pools. The clusterer
    # links them for static tasks, but a world task is clustered on its skeleton, and two
    # requests for one product in two worlds are two skeletons.
    first_with: dict[str, int] = {}
    for index, task in enumerate(tasks):
        for item in task.gold:
            sets.union(first_with.setdefault(gold_key(task, item.product_id), index), index)
    roots: dict[int, list[int]] = defaultdict(list)
    for index in range(len(tasks)):
        roots[sets.find(index)].append(index)
    return {min(cluster_key(tasks[i]) for i in members): members for members in roots.values()}


def merged_pool(pools: Iterable[Pool]) -> Pool:
    """Return the one pool a cluster whose members sit in ``pools`` must take (see the module docstring)."""
    present = set(pools)
    if len(present) == 1:
        return next(iter(present))
    if "retired" in present or "practice" in present:
        return "retired"
    return "never_touch"


def reconcile_pools(
    tasks: Sequence[Task], *, groups: dict[str, list[int]] | None = None
) -> tuple[list[Task], dict[str, Pool]]:
    """Put every mixed-pool group wholly into its safest pool; return the tasks and the groups moved.

    Args:
        tasks: the tasks.
        groups: precomputed ``pool_groups(tasks)`` (computed when absent).
    """
    out = list(tasks)
    moved: dict[str, Pool] = {}
    for cluster, members in (groups if groups is not None else pool_groups(tasks)).items():
        pools = {tasks[i].pool for i in members}
        if len(pools) == 1:
            continue
        pool = merged_pool(pools)
        moved[cluster] = pool
        for i in members:
            out[i] = tasks[i].model_copy(update={"pool": pool})
        logger.info("pool_reconciled group=%s pools=%s pool=%s", cluster, ",".join(sorted(pools)), pool)
    return out, moved


def move_clusters(tasks: Sequence[Task], clusters: Iterable[str], pool: Pool) -> list[Task]:
    """Move whole clusters to ``pool``.

    Raises:
        InvalidTask: a cluster is unknown, spans several pools, or the move is not allowed.
    """
    groups = clusters_of(tasks)
    out = list(tasks)
    for cluster in clusters:
        members = groups.get(cluster)
        if members is None:
            raise InvalidTask(f"unknown leak cluster {cluster}")
        current = {tasks[i].pool for i in members}
        if len(current) != 1:
            raise InvalidTask(f"cluster {cluster} spans pools {sorted(current)}; reconcile first")
        source = next(iter(current))
        if source == pool:
            continue
        if pool not in ALLOWED_MOVES[source]:
            raise InvalidTask(f"cluster {cluster}: moving {source} -> {pool} is not allowed")
        for i in members:
            out[i] = tasks[i].model_copy(update={"pool": pool})
    return out


def _draw_order(cluster: str, seed: str) -> str:
    return hashlib.sha256(f"{seed}\x00{cluster}".encode()).hexdigest()


def assign_pools(
    tasks: Sequence[Task], *, practice: float = 0.0, never_touch: float = 0.0, seed: str = "0"
) -> list[Task]:
    """Move held_out pool groups into practice and never_touch until each holds its share of all tasks.

    Groups (``pool_groups``) are taken in a seeded hash order (independent of file order), whole,
    until the pool reaches ``fraction * len(tasks)`` tasks (it may overshoot by part of one
    group). Tasks already in a pool stay there; only fully held_out groups are candidates.

    Raises:
        InvalidTask: a fraction is outside [0, 1] or the two add up to more than 1.
    """
    if not (0 <= practice <= 1 and 0 <= never_touch <= 1 and practice + never_touch <= 1):
        raise InvalidTask(
            f"pool fractions must lie in [0, 1] and sum to at most 1: {practice}, {never_touch}"
        )
    groups = pool_groups(tasks)
    out, _ = reconcile_pools(tasks, groups=groups)
    candidates = sorted(
        (c for c, members in groups.items() if all(out[i].pool == "held_out" for i in members)),
        key=lambda c: _draw_order(c, seed),
    )
    counts: dict[str, int] = {p: sum(1 for t in out if t.pool == p) for p in ("practice", "never_touch")}
    chosen: dict[str, Pool] = {}
    shares: tuple[tuple[Pool, float], ...] = (("practice", practice), ("never_touch", never_touch))
    for pool, fraction in shares:
        target = round(fraction * len(out))
        for cluster in candidates:
            if counts[pool] >= target:
                break
            if cluster in chosen:
                continue
            chosen[cluster] = pool
            counts[pool] += len(groups[cluster])
    for cluster, pool in chosen.items():
        for i in groups[cluster]:
            out[i] = out[i].model_copy(update={"pool": pool})
    logger.info("pools_assigned practice=%d never_touch=%d", counts["practice"], counts["never_touch"])
    return out
