"""Leak clusters: tasks that could leak each other's answers, grouped by union-find.

Two tasks are linked when any of four rules holds:

1. ``gold``: they share a gold product id;
2. ``query``: their normalised queries are equal (``arena.wording.normalise_query``);
3. ``spec``: their canonical constraint specs are equal, product ids removed (titles, prices,
   services, variants, attributes per item, items in sorted order; voucher and budget);
4. ``near_dup``: same intent and near-duplicate wording: the Jaccard similarity of their content
   shingles (``arena.wording.shingles``: template boilerplate and the voucher block removed)
   is at least ``near_dup_threshold`` (0.5 by default). Candidates come from MinHash LSH
   (128 permutations, LSH threshold 0.2 below the link threshold, for recall); each candidate
   pair is then confirmed on the exact Jaccard, so a link never rests on an estimate.

A world task (``source == "world"``, compiled by ``arena.world``) is keyed on its *skeleton*,
the values a world sets taken out, so the same task reused in another world is the same leak
cluster: a gold id is its base product's (a new listing ``<id>-w<6 hex>n<k>`` is ``<id>``), its
query has every number masked (prices, budgets), and its spec drops price bounds, the budget and
the voucher's amounts (``world_skeleton``). Other tasks are keyed exactly as before.

Connected components are clusters. A cluster's id is stable: a component keeps an id one of
its members already carries (the smallest one not claimed by another component, components
taken in order of their smallest task id); otherwise it gets ``lc-`` plus a hash of its
smallest task id. The same input always gives the same ids.
"""

from __future__ import annotations

import logging
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from datasketch import MinHash, MinHashLSH

from arena.types import Task, canonical_json, content_hash
from arena.wording import jaccard, normalise_query, normalise_text, shingles

logger = logging.getLogger(__name__)

Rule = Literal["gold", "query", "spec", "near_dup"]
RULES: tuple[Rule, ...] = ("gold", "query", "spec", "near_dup")
NEAR_DUP_THRESHOLD = 0.5
# The audit's looser threshold: pool moves keep near-duplicates at this level in one pool too.
AUDIT_NEAR_DUP_THRESHOLD = 0.4
NEAR_MISS_THRESHOLD = 0.3
# LSH only proposes candidates; it runs this far below the Jaccard being confirmed, for recall
# (on 17.7k generated tasks, 0.1 below missed 7% of the pairs at >= 0.5, 0.2 below 1.4%, 0.3 none;
# a pair the link rule misses still lands in one pool through the pool groups, at LSH 0.2).
LSH_MARGIN = 0.2
# The audit and the pool groups share one LSH, so every pair the audit can flag is a pool-group link.
AUDIT_LSH_THRESHOLD = 0.2
NUM_PERM = 128


class UnionFind:
    """Disjoint sets over ``0..n-1`` with path halving and union by size."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))
        self.size = [1] * n

    def find(self, x: int) -> int:
        """Return the representative of ``x``'s set."""
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(self, a: int, b: int) -> bool:
        """Merge the sets of ``a`` and ``b``; return whether they were apart."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        if self.size[ra] < self.size[rb]:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.size[ra] += self.size[rb]
        return True


@dataclass(frozen=True)
class Link:
    """Two tasks (by position) linked by a rule; ``similarity`` is the Jaccard for near-duplicates."""

    a: int
    b: int
    rule: Rule
    similarity: float = 1.0


@dataclass
class ClusterReport:
    """What clustering found: links per rule, cluster count and the largest cluster's size."""

    tasks: int = 0
    clusters: int = 0
    largest: int = 0
    links: dict[str, int] = field(default_factory=dict)


WORLD_SOURCE = "world"
# A new listing's id in a world (``arena.world.delta``): its source id, then the world's tag.
_WORLD_LISTING = re.compile(r"-w[0-9a-f]{6}n[0-9]+$")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def is_world_task(task: Task) -> bool:
    """Whether ``task`` was compiled against a world (its keys are then its skeleton's)."""
    return task.source == WORLD_SOURCE


def gold_key(task: Task, product_id: str) -> str:
    """The ``gold`` rule's key of one gold id: a world task's is its base product's id."""
    return _WORLD_LISTING.sub("", product_id) if is_world_task(task) else product_id


def query_key(task: Task) -> str:
    """The ``query`` rule's key: the normalised query; a world task's with every number masked."""
    text = normalise_query(task.query)
    return _NUMBER.sub("#", text) if is_world_task(task) else text


def constraint_spec(task: Task) -> str:
    """Return the canonical constraint spec of a task, product ids removed (the ``spec`` rule's key).

    A world task's spec is its skeleton: price bounds, budget and voucher amounts removed too.
    """
    world = is_world_task(task)
    items: list[str] = []
    for item in task.gold:
        spec: dict[str, Any] = item.model_dump(mode="json", exclude={"product_id", "product"})
        spec["titles"] = sorted(normalise_text(t) for t in item.titles)
        spec["service"] = sorted(item.service)
        if world:
            spec.pop("price")
        items.append(canonical_json(spec))
    voucher = task.voucher.model_dump(mode="json") if task.voucher else None
    if world and task.voucher is not None:
        voucher = {"voucher_type": task.voucher.voucher_type, "discount_type": task.voucher.discount_type}
    return canonical_json(
        {
            "items": sorted(items),
            "voucher": voucher,
            "budget": None if world else task.budget,
            "knowledge": task.knowledge_attribute,
        }
    )


def schema_words(task: Task) -> list[str]:
    """Return the attribute and sku key names of a task's gold items, as words ("phone_case_type" too)."""
    keys = {k for item in task.gold for variant in item.sku_options for k in variant}
    keys |= {k for item in task.gold for attr in item.attributes for k in attr}
    return sorted(w for k in keys for w in (k, k.replace("_", " ")))


def task_shingles(task: Task) -> set[str]:
    """Return a task's near-duplicate shingles: its query's content shingles minus its own key names."""
    return shingles(task.query, schema_words=schema_words(task))


def _key_links(keys: Iterator[tuple[int, str]], rule: Rule) -> Iterator[Link]:
    first: dict[str, int] = {}
    for index, key in keys:
        if key in first:
            if first[key] != index:
                yield Link(first[key], index, rule)
        else:
            first[key] = index


def minhashes(shingle_sets: Sequence[set[str]], num_perm: int = NUM_PERM) -> list[MinHash]:
    """Compute one MinHash per shingle set (in bulk, sharing the permutations)."""
    encoded = [[s.encode("utf-8") for s in sorted(grams)] for grams in shingle_sets]
    return list(MinHash.bulk(encoded, num_perm=num_perm))


def near_duplicate_links(
    tasks: Sequence[Task],
    threshold: float = NEAR_DUP_THRESHOLD,
    *,
    lsh_threshold: float | None = None,
    num_perm: int = NUM_PERM,
    only: Callable[[int, int], bool] | None = None,
) -> list[Link]:
    """Return every pair of same-intent tasks whose content-shingle Jaccard is at least ``threshold``.

    MinHash LSH proposes candidates (at ``lsh_threshold``, by default ``LSH_MARGIN`` below
    ``threshold``, for recall); the exact Jaccard of the shingle sets confirms each pair.
    ``only(a, b)``, when given, skips candidate pairs before any Jaccard is computed (the audit
    only wants pairs across pools).
    """
    lsh_at = max(0.05, threshold - LSH_MARGIN) if lsh_threshold is None else lsh_threshold
    grams = [task_shingles(t) for t in tasks]
    hashes = minhashes(grams, num_perm)
    lsh_by_intent: dict[str, MinHashLSH] = {}
    links: list[Link] = []
    for index, task in enumerate(tasks):
        if not grams[index]:
            continue
        lsh = lsh_by_intent.get(task.intent)
        if lsh is None:
            lsh = MinHashLSH(threshold=lsh_at, num_perm=num_perm)
            lsh_by_intent[task.intent] = lsh
        mine = grams[index]
        for other in sorted(lsh.query(hashes[index])):
            if only is not None and not only(other, index):
                continue
            theirs = grams[other]
            # Jaccard <= smaller/larger size: most LSH candidates fail this bound without a set op.
            if min(len(mine), len(theirs)) < threshold * max(len(mine), len(theirs)):
                continue
            similarity = jaccard(mine, theirs)
            if similarity >= threshold:
                links.append(Link(other, index, "near_dup", similarity))
        lsh.insert(index, hashes[index])
    return links


def find_links(tasks: Sequence[Task], *, near_dup_threshold: float = NEAR_DUP_THRESHOLD) -> list[Link]:
    """Return the links of all four rules (exact rules link each task to the first sharing its key)."""
    golds = ((i, gold_key(t, item.product_id)) for i, t in enumerate(tasks) for item in t.gold)
    links = list(_key_links(golds, "gold"))
    links += _key_links(((i, query_key(t)) for i, t in enumerate(tasks)), "query")
    links += _key_links(((i, constraint_spec(t)) for i, t in enumerate(tasks)), "spec")
    links += near_duplicate_links(tasks, near_dup_threshold)
    return links


def _cluster_ids(tasks: Sequence[Task], components: dict[int, list[int]]) -> dict[int, str]:
    ordered = sorted(components.items(), key=lambda kv: min(tasks[i].task_id for i in kv[1]))
    claimed: set[str] = set()
    ids: dict[int, str] = {}
    for root, members in ordered:
        existing = sorted({c for i in members if (c := tasks[i].leak_cluster) and c not in claimed})
        if existing:
            chosen = existing[0]
        else:
            chosen = content_hash(min(tasks[i].task_id for i in members), prefix="lc-")[:19]
        claimed.add(chosen)
        ids[root] = chosen
    return ids


def cluster_tasks(
    tasks: Sequence[Task], *, near_dup_threshold: float = NEAR_DUP_THRESHOLD
) -> tuple[list[Task], ClusterReport]:
    """Assign every task its leak cluster; return the tasks (same order) and a report.

    Args:
        tasks: the tasks to cluster together (e.g. a new batch plus every task ever kept).
        near_dup_threshold: content-shingle Jaccard at or above which same-intent tasks link.
    """
    links = find_links(tasks, near_dup_threshold=near_dup_threshold)
    sets = UnionFind(len(tasks))
    for link in links:
        sets.union(link.a, link.b)
    components: dict[int, list[int]] = defaultdict(list)
    for index in range(len(tasks)):
        components[sets.find(index)].append(index)
    ids = _cluster_ids(tasks, components)
    out = [t.model_copy(update={"leak_cluster": ids[sets.find(i)]}) for i, t in enumerate(tasks)]
    counts = Counter(link.rule for link in links)
    report = ClusterReport(
        tasks=len(tasks),
        clusters=len(components),
        largest=max((len(m) for m in components.values()), default=0),
        links={rule: counts.get(rule, 0) for rule in RULES},
    )
    logger.info("clusters tasks=%d clusters=%d largest=%d", report.tasks, report.clusters, report.largest)
    return out, report


def assign_clusters(tasks: Sequence[Task], *, near_dup_threshold: float = NEAR_DUP_THRESHOLD) -> list[Task]:
    """Return the tasks with ``leak_cluster`` set by the four link rules (see the module docstring)."""
    return cluster_tasks(tasks, near_dup_threshold=near_dup_threshold)[0]
