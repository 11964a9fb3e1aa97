"""Benchmark: tasks generated per second, and leak-clustering time at 10k and 100k tasks.

Builds a synthetic catalog and its search index in a temporary directory, generates tasks
(with the findability search on, then off), clusters the first N tasks for each size, and
audits the largest set split into pools. Prints the figures and writes
``bench/results/tasks.json``.

Usage: python bench/tasks.py [--sizes 10000,100000] [--products 300000] [--quick]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from arena.audit import audit
from arena.catalog import write_products
from arena.clusters import cluster_tasks
from arena.generate import GenerateConfig, generate_tasks, make_finder
from arena.index import build_index, open_index
from arena.pools import assign_pools
from arena.synth import iter_synth_products
from arena.types import Task

RESULTS = Path(__file__).resolve().parent / "results" / "tasks.json"


def build(products: int, workdir: Path) -> tuple[Path, float]:
    catalog = workdir / "catalog.jsonl"
    write_products(iter_synth_products(products, seed=11), catalog)
    started = time.perf_counter()
    build_index([catalog], workdir / "index")
    return workdir / "index", time.perf_counter() - started


def generate(index_dir: Path, n: int, *, findable: bool) -> tuple[list[Task], dict[str, Any]]:
    index = open_index(index_dir)
    try:
        finder = make_finder(index) if findable else None
        tasks, report = generate_tasks(index, n=n, seed=3, finder=finder, config=GenerateConfig())
    finally:
        index.close()
    figures = {
        "tasks": report.tasks,
        "draws": report.draws,
        "seconds": round(report.seconds, 3),
        "tasks_per_second": round(report.tasks / report.seconds, 1) if report.seconds else None,
        "rejected": dict(report.rejected),
    }
    return tasks, figures


def cluster(tasks: list[Task]) -> dict[str, Any]:
    started = time.perf_counter()
    clustered, report = cluster_tasks(tasks)
    seconds = time.perf_counter() - started
    pooled = assign_pools(clustered, practice=0.1, never_touch=0.1, seed="bench")
    started = time.perf_counter()
    audited = audit(pooled)
    audit_seconds = time.perf_counter() - started
    return {
        "tasks": len(tasks),
        "cluster_seconds": round(seconds, 3),
        "clusters": report.clusters,
        "largest_cluster": report.largest,
        "links": report.links,
        "audit_seconds": round(audit_seconds, 3),
        "audit_ok": audited.ok,
        "audit_near_misses": audited.near_miss_count,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated task counts to cluster")
    parser.add_argument("--products", type=int, default=300_000, help="synthetic catalog size")
    parser.add_argument("--findable-n", type=int, default=2000, help="tasks made with the findability search")
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    products, findable_n = args.products, args.findable_n
    if args.quick:
        sizes, products, findable_n = [1000, 3000], 20_000, 300
    results: dict[str, Any] = {"machine": platform.machine(), "python": platform.python_version()}
    with tempfile.TemporaryDirectory() as tmp:
        index_dir, build_seconds = build(products, Path(tmp))
        results["catalog"] = {"products": products, "index_build_seconds": round(build_seconds, 2)}
        _, results["generate_findable"] = generate(index_dir, findable_n, findable=True)
        print(f"generate (findable): {results['generate_findable']}")
        tasks, results["generate_fast"] = generate(index_dir, max(sizes), findable=False)
        print(f"generate (no search): {results['generate_fast']}")
    results["cluster"] = []
    for size in sizes:
        if size > len(tasks):
            print(f"skipping size {size}: only {len(tasks)} tasks", file=sys.stderr)
            continue
        figures = cluster(tasks[:size])
        results["cluster"].append(figures)
        print(f"cluster {size}: {figures}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
