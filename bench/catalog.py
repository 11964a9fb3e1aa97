"""Benchmark: synthetic catalog generation throughput, file size and peak memory per catalog size.

Each size runs in its own child process (so peak RSS is that run's own), writing plain
JSONL and gzip JSONL to a scratch folder, which is removed afterwards.

Usage: python bench/catalog.py [--sizes 100000,1000000] [--quick] [--formats jsonl,jsonl.gz]
Writes bench/results/catalog.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "catalog.json"


def run_one(size: int, fmt: str, seed: int, folder: Path) -> dict[str, object]:
    """Generate one catalog in this process and measure it."""
    sys.path.insert(0, str(ROOT))
    from arena.catalog import write_products
    from arena.synth import iter_synth_products

    out = folder / f"synth-{size}.{fmt}"
    started = time.perf_counter()
    written = write_products(iter_synth_products(size, seed), out)
    seconds = time.perf_counter() - started
    size_bytes = out.stat().st_size
    out.unlink()
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "products": written,
        "format": fmt,
        "seconds": round(seconds, 2),
        "products_per_second": round(written / seconds),
        "bytes": size_bytes,
        "bytes_per_product": round(size_bytes / written, 1),
        "peak_rss_mib": round(peak_kib / 1024, 1),
    }


def from_tasks_figure() -> dict[str, object] | None:
    """Time the from-tasks rebuild of ShoppingBench's 900 public tasks, if they are here."""
    sys.path.insert(0, str(ROOT))
    from arena.from_tasks import build_from_tasks
    from arena.shoppingbench import load_shoppingbench

    for folder in (ROOT.parent / "shared/data/shoppingbench", Path("/work/shared/data/shoppingbench")):
        files = sorted(folder.glob("synthesize_*_test.jsonl"))
        if files:
            started = time.perf_counter()
            tasks = load_shoppingbench(files)
            catalog = build_from_tasks(tasks, seed=0)
            return {
                "tasks": len(tasks),
                "products": len(catalog.products),
                "gold": len(catalog.gold_ids),
                "decoys": len(catalog.decoys),
                "conflicts": len(catalog.conflicts),
                "seconds": round(time.perf_counter() - started, 2),
            }
    return None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="100000,1000000", help="comma-separated product counts")
    parser.add_argument("--formats", default="jsonl,jsonl.gz", help="jsonl and/or jsonl.gz")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="one small size (10k), for a smoke run")
    parser.add_argument("--single", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.single is not None:
        print(json.dumps(run_one(args.single, args.formats, args.seed, Path(args.folder))))
        return
    sizes = [10_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-catalog-") as folder:
        for size in sizes:
            for fmt in args.formats.split(","):
                child = [sys.executable, __file__, "--single", str(size), "--formats", fmt]
                child += ["--seed", str(args.seed), "--folder", folder]
                result = json.loads(subprocess.run(child, check=True, capture_output=True, text=True).stdout)
                runs.append(result)
                print(
                    f"synth {result['products']:>9,} {fmt:<9} {result['products_per_second']:>7,} products/s "
                    f"{result['bytes'] / 2**20:>8.1f} MiB ({result['bytes_per_product']} B/product) "
                    f"peak RSS {result['peak_rss_mib']} MiB"
                )
    ft = from_tasks_figure()
    if ft is not None:
        print(f"from-tasks {ft['tasks']} tasks -> {ft['products']} products in {ft['seconds']} s")
    body = {
        "benchmark": "catalog",
        "machine": {"python": platform.python_version(), "cpus": _cpus(), "platform": platform.platform()},
        "synth": runs,
        "from_tasks": ft,
        "load_at_end": list(os.getloadavg()),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


if __name__ == "__main__":
    main()
