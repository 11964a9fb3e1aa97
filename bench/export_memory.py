"""Export memory against stored trajectory size: peak RSS of one ``curate_and_export`` per database.

Two SQLite databases hold the same ``--n`` judged traces (the storage bench's synthetic ones),
differing only in how much text each trajectory carries (a long reasoning field on its first
assistant message): ``--small`` and ``--large`` characters per trace, about 8 MB and 83 MB
stored at the defaults (the sizes of the issue's measurement). Each export runs in a fresh
Python process, so ``ru_maxrss`` is that export's own peak, imports included. Memory that
does not grow with stored size is the goal: the reads page by stored bytes, not only by rows.

Example: python bench/export_memory.py
Example: python bench/export_memory.py --n 400 --large 400000

Writes bench/results/export_memory.json.
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
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the synthetic traces live in tests/

RESULTS = ROOT / "bench" / "results" / "export_memory.json"
TASKS = 50


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=200, help="judged traces per database")
    parser.add_argument("--small", type=int, default=40_000, help="characters of text per trace, small")
    parser.add_argument("--large", type=int, default=415_000, help="characters of text per trace, large")
    parser.add_argument("--child", nargs=2, metavar=("URL", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=RESULTS)
    return parser.parse_args()


def fill(url: str, n: int, chars: int) -> int:
    """Store ``n`` traces carrying ``chars`` characters of reasoning each; return the database's bytes."""
    from arena.clusters import assign_clusters
    from storage.db import make_engine, make_sessionmaker, upgrade
    from storage.repository import open_round, save_judged, save_tasks
    from tests.storage.factories import T0, VALIDATOR, make_task, make_trace

    engine = make_engine(url)
    upgrade(engine)
    tasks = assign_clusters([make_task(i) for i in range(TASKS)])
    with make_sessionmaker(engine)() as session:
        save_tasks(session, tasks=tasks)
        open_round(session, round_id=0, validator_hotkey=VALIDATOR, started_at=T0)
        for i in range(n):
            trace = make_trace(i, task=tasks[i % TASKS], round_id=0)
            assert trace.trajectory is not None
            messages = list(trace.trajectory.messages)
            first = next(j for j, m in enumerate(messages) if m.role == "assistant")
            padding = " ".join(f"w{k % 997}" for k in range(chars // 5))[:chars]
            messages[first] = messages[first].model_copy(update={"reasoning_content": padding})
            padded = trace.trajectory.model_copy(update={"messages": tuple(messages)})
            save_judged(
                session,
                episode=trace.episode,
                trajectory=padded,
                tool_log=trace.tool_log,
                judgment=trace.judgment,
            )
    path = Path(str(engine.url.database))
    engine.dispose()
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def child(url: str, out: str) -> None:
    """Run one export and print its figures as JSON (in a fresh process)."""
    from curation.config import CurationConfig
    from curation.export import curate_and_export
    from storage.db import make_engine, make_sessionmaker

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    engine = make_engine(url)
    began = time.perf_counter()
    with make_sessionmaker(engine)() as session:
        funnel = curate_and_export(session, Path(out), config=CurationConfig(axes=("A", "mixed", "unknown")))
    seconds = time.perf_counter() - began
    exported = sum(p.stat().st_size for p in Path(out).rglob("*") if p.is_file())
    print(
        json.dumps(
            {
                "traces": funnel["source"]["traces"],
                "seconds": round(seconds, 2),
                "export_bytes": exported,
                "peak_rss_mib_after_imports": round(before / 1024, 1),
                "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            }
        )
    )


def measure(n: int, chars: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="arena-export-mem-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'arena.db'}"
        stored = fill(url, n, chars)
        done = subprocess.run(
            [sys.executable, __file__, "--child", url, str(Path(tmp) / "export")],
            check=True,
            capture_output=True,
            text=True,
        )
        figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    figures |= {"chars_per_trace": chars, "stored_bytes": stored}
    return figures


def main() -> None:
    args = parse_args()
    if args.child:
        child(*args.child)
        return
    runs = {}
    for name, chars in (("small", args.small), ("large", args.large)):
        print(f"== {name}: {args.n} traces of {chars} characters", file=sys.stderr)
        runs[name] = measure(args.n, chars)
        r = runs[name]
        print(
            f"{name:>6}: stored {r['stored_bytes'] / 1e6:6.1f} MB  "
            f"export peak RSS {r['peak_rss_mib']:7.1f} MiB "
            f"(after imports {r['peak_rss_mib_after_imports']:.1f})  {r['seconds']} s"
        )
    growth = runs["large"]["peak_rss_mib"] - runs["small"]["peak_rss_mib"]
    stored = (runs["large"]["stored_bytes"] - runs["small"]["stored_bytes"]) / 2**20
    print(f"peak RSS grows {growth:.1f} MiB for {stored:.1f} MiB more stored")
    results = {
        "benchmark": "export_memory",
        "n": args.n,
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
        "runs": runs,
        "rss_growth_mib": round(growth, 1),
        "stored_growth_mib": round(stored, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
