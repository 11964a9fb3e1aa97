"""World benchmark: compile and load a world pack over a large base index; seconds and peak memory.

The base is a synthetic catalog (``arena.synth``) indexed once per size under ``--work`` and
reused by later runs, or an index already built (``--base-index``, e.g. the 1M base that
``bench/toolserver.py`` caches under /tmp/arena-1m/synth-1000000-7/index: the same products).
Timed: ``compile_world`` (delta, vouchers, tasks with their searches, changes) plus
``save_pack``, then ``load_pack`` plus building the ``WorldOverlay``; and a few ``find_product``
calls through the overlay against the base. Each step reports wall seconds and the process's
CPU seconds: on a shared machine the CPU figure is the one that compares (the work is one
thread). Peak RSS is read from ``getrusage`` before compiling (base open) and after loading, so
the delta is what the world costs on top of the base.

Example: python bench/world.py --size 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import time
from pathlib import Path
from typing import Any

from arena.catalog import write_products
from arena.index import build_index, open_index
from arena.search import find_products
from arena.synth import iter_synth_products
from arena.world.compile import compile_world
from arena.world.overlay import WorldOverlay
from arena.world.pack import load_pack, save_pack

RESULTS = Path(__file__).parent / "results" / "world.json"


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def base_index(size: int, seed: int, work: Path) -> tuple[Path, float | None]:
    index_dir = work / f"base-{size}-{seed}" / "index"
    if (index_dir / "manifest.json").is_file():
        return index_dir, None
    catalog = index_dir.parent / "catalog.jsonl"
    index_dir.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    write_products(iter_synth_products(size, seed), catalog)
    build_index([catalog], index_dir)
    catalog.unlink()
    return index_dir, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=20_000, help="base catalog size")
    parser.add_argument("--seed", type=int, default=7, help="synthetic catalog seed")
    parser.add_argument("--world-seed", default="bench-round-1")
    parser.add_argument("--work", type=Path, default=Path("/tmp/arena-bench-world"))
    parser.add_argument("--base-index", type=Path, default=None, help="an index built already (read only)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.base_index is not None:
        index_dir, build_s = args.base_index, None
    else:
        index_dir, build_s = base_index(args.size, args.seed, args.work)
    pack_dir = args.work / "pack"
    shutil.rmtree(pack_dir, ignore_errors=True)
    with open_index(index_dir) as base:
        size = len(base)
        rss_base = peak_rss_mib()
        started, cpu = time.perf_counter(), time.process_time()
        pack = compile_world(args.world_seed, base)
        save_pack(pack, pack_dir)
        compile_s, compile_cpu_s = time.perf_counter() - started, time.process_time() - cpu
        started, cpu = time.perf_counter(), time.process_time()
        world = WorldOverlay(base, load_pack(pack_dir).delta)
        load_s, load_cpu_s = time.perf_counter() - started, time.process_time() - cpu
        rss_world = peak_rss_mib()
        rng = random.Random(1)
        titles = [
            p.title
            for p in base.products([base.product_id_at(rng.randrange(len(base))) for _ in range(50)]).values()
        ]
        queries = [" ".join(t.split()[:3]) for t in titles]
        timings: dict[str, float] = {}
        for name, index in (("base", base), ("world", world)):
            started = time.perf_counter()
            for q in queries:
                find_products(index, q=q, page=1, sort="priceasc")
            timings[name] = (time.perf_counter() - started) / len(queries) * 1e3
    result: dict[str, Any] = {
        "size": size,
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "base_build_s": None if build_s is None else round(build_s, 1),
        "compile_s": round(compile_s, 3),
        "load_s": round(load_s, 3),
        "compile_plus_load_s": round(compile_s + load_s, 3),
        "compile_cpu_s": round(compile_cpu_s, 3),
        "load_cpu_s": round(load_cpu_s, 3),
        "compile_plus_load_cpu_s": round(compile_cpu_s + load_cpu_s, 3),
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "peak_rss_base_mib": round(rss_base, 1),
        "peak_rss_delta_mib": round(rss_world - rss_base, 1),
        "pack_bytes": sum(p.stat().st_size for p in pack_dir.iterdir()),
        "delta": {
            "price_moves": len(pack.delta.price_moves),
            "stock": len(pack.delta.stock),
            "new_listings": len(pack.delta.new_listings),
            "delisted": len(pack.delta.delisted),
            "changes": len(pack.delta.changes),
        },
        "tasks": len(pack.tasks),
        "find_product_ms": {k: round(v, 3) for k, v in timings.items()},
    }
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    existing = json.loads(args.out.read_text()) if args.out.is_file() else {}
    existing[str(args.size)] = result
    args.out.write_text(json.dumps(existing, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
