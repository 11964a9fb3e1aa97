"""Storage benchmark: judged episodes per second into SQLite and PostgreSQL, up to ``--n`` stored traces.

Each episode is written the way the validator writes it: one ``save_judged`` call, one
transaction (episode + 5-9 tool log entries + judgment; 13-21 chat messages), committed
durably (SQLite WAL with synchronous=FULL; PostgreSQL with fsync and synchronous_commit on).
Only the time inside ``save_judged`` counts (building the synthetic trace does not). Rates are
reported per window of stored traces, so ``rate_at_n`` is the ingest rate with ``n`` traces
already stored. Then the whole table is streamed back once with ``iter_judged``, and curated
once: ``curate_and_export`` runs the whole funnel (normalise, rejects, gates, ranking, dedup,
split with the task audit) and writes all four formats (JSONL + Parquet), so ``curate.rate`` is
stored traces per second from database to finished export.

Example: python bench/storage.py --n 100000
Example: python bench/storage.py --quick --backends sqlite
Example: python bench/storage.py --backends postgres --pg-url postgresql+psycopg://arena@127.0.0.1/bench
Example: python bench/storage.py --n 100000 --backends sqlite --skip-read

Writes bench/results/storage.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the synthetic traces and the PostgreSQL harness live in tests/

from sqlalchemy import Engine, text  # noqa: E402

from arena.clusters import assign_clusters  # noqa: E402
from curation.config import CurationConfig  # noqa: E402
from curation.export import curate_and_export  # noqa: E402
from neurons.batch import batch_collector  # noqa: E402
from storage.db import make_engine, make_sessionmaker, upgrade  # noqa: E402
from storage.repository import iter_judged, open_round, save_judged, save_tasks  # noqa: E402
from tests.postgres import running_postgres  # noqa: E402
from tests.storage.factories import T0, VALIDATOR, make_task, make_trace  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "storage.json"
TASKS = 1000
EPISODES_PER_ROUND = 1000


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=100_000, help="judged traces to store per backend")
    parser.add_argument("--quick", action="store_true", help="a smoke run: --n 2000")
    parser.add_argument("--backends", default="sqlite,postgres", help="comma-separated: sqlite, postgres")
    parser.add_argument(
        "--windows", type=int, default=10, help="report the rate over this many equal windows"
    )
    parser.add_argument(
        "--pg-url", default=None, help="use this PostgreSQL database instead of a throwaway one"
    )
    parser.add_argument("--skip-read", action="store_true", help="do not stream the table back")
    parser.add_argument("--skip-curate", action="store_true", help="do not run the curation funnel")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.quick:
        args.n = min(args.n, 2000)
    return args


@contextlib.contextmanager
def database(backend: str, pg_url: str | None) -> Iterator[str]:
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="arena-bench-") as tmp:
            yield f"sqlite:///{Path(tmp) / 'arena.db'}"
    elif pg_url:
        yield pg_url
    else:
        # Crash-safe settings (fsync on), as in production, so the figures mean something.
        with running_postgres(durable=True) as server:
            yield server.create_database("bench")


def database_bytes(engine: Engine) -> int:
    with engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            return int(conn.execute(text("SELECT pg_database_size(current_database())")).scalar() or 0)
    path = Path(str(engine.url.database))
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def ingest(url: str, n: int, windows: int, read: bool) -> dict[str, Any]:
    engine = make_engine(url)
    upgrade(engine)
    # Clustered like real tasks, so the curation audit sees consistent leak clusters.
    tasks = assign_clusters([make_task(i) for i in range(TASKS)])
    maker = make_sessionmaker(engine)
    latencies: list[float] = []
    window_size = max(1, n // windows)
    report: list[dict[str, float]] = []
    with maker() as session:
        save_tasks(session, tasks=tasks)
        window_start = 0.0
        for i in range(n):
            round_id = i // EPISODES_PER_ROUND
            if i % EPISODES_PER_ROUND == 0:
                open_round(session, round_id=round_id, validator_hotkey=VALIDATOR, started_at=T0)
            trace = make_trace(i, task=tasks[i % TASKS], round_id=round_id)
            began = time.perf_counter()
            save_judged(
                session,
                episode=trace.episode,
                trajectory=trace.trajectory,
                tool_log=trace.tool_log,
                judgment=trace.judgment,
            )
            latencies.append(time.perf_counter() - began)
            window_start += latencies[-1]
            if (i + 1) % window_size == 0 or i + 1 == n:
                done = (i + 1) % window_size or window_size
                report.append({"stored": i + 1, "rate": round(done / window_start, 1)})
                print(f"  stored={i + 1:>7} rate={done / window_start:8.1f} episodes/s", file=sys.stderr)
                window_start = 0.0
    result: dict[str, Any] = {
        "episodes": n,
        "seconds_in_save": round(sum(latencies), 2),
        "rate_overall": round(n / sum(latencies), 1),
        "rate_at_n": report[-1]["rate"],
        "windows": report,
        "latency_ms": {
            "p50": round(statistics.median(latencies) * 1000, 2),
            "p99": round(sorted(latencies)[int(0.99 * (len(latencies) - 1))] * 1000, 2),
        },
        "db_bytes": database_bytes(engine),
    }
    result["bytes_per_episode"] = round(result["db_bytes"] / n)
    if read:
        began = time.perf_counter()
        with maker() as session:
            streamed = sum(1 for _ in iter_judged(session, batch_size=500))
        seconds = time.perf_counter() - began
        result["stream"] = {
            "traces": streamed,
            "seconds": round(seconds, 2),
            "rate": round(streamed / seconds, 1),
        }
    engine.dispose()
    return result


def curation(url: str) -> dict[str, Any]:
    """Curate every stored trace once, to a throwaway directory, with all four formats."""
    engine = make_engine(url)
    maker = make_sessionmaker(engine)
    # The factory labels axes A/B/mixed/unknown in turn; take all but B so most traces reach dedup.
    config = CurationConfig(axes=("A", "mixed", "unknown"))
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # As ``arena curate`` runs it: with the batch commands' collector thresholds (neurons.batch).
    with (
        tempfile.TemporaryDirectory(prefix="arena-curate-bench-") as tmp,
        maker() as session,
        batch_collector(),
    ):
        began = time.perf_counter()
        funnel = curate_and_export(session, Path(tmp) / "export", config=config)
        seconds = time.perf_counter() - began
        exported = sum(p.stat().st_size for p in (Path(tmp) / "export").rglob("*") if p.is_file())
    engine.dispose()
    traces = funnel["source"]["traces"]
    return {
        "traces": traces,
        "seconds": round(seconds, 2),
        "rate": round(traces / seconds, 1),
        "stages": {name: [s["in"], s["out"]] for name, s in funnel["stages"].items()},
        "exports": funnel["exports"],
        "export_bytes": exported,
        # ru_maxrss is the process's peak so far (KiB on Linux): before includes the ingest phase.
        "peak_rss_mib_before": round(rss_before / 1024, 1),
        "peak_rss_mib_after": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> None:
    args = parse_args()
    results: dict[str, Any] = {
        "benchmark": "storage",
        "n": args.n,
        "quick": args.quick,
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
        "backends": {},
    }
    for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
        if backend not in ("sqlite", "postgres"):
            sys.exit(f"unknown backend {backend!r} (sqlite, postgres)")
        print(f"== {backend}: {args.n} judged episodes, one transaction each", file=sys.stderr)
        with database(backend, args.pg_url) as url:
            results["backends"][backend] = ingest(url, args.n, args.windows, not args.skip_read)
            if not args.skip_curate:
                print(f"== {backend}: curating {args.n} stored traces", file=sys.stderr)
                results["backends"][backend]["curate"] = curation(url)
    for backend, figures in results["backends"].items():
        stream = figures.get("stream", {}).get("rate", "-")
        curate = figures.get("curate", {}).get("rate", "-")
        latency = figures["latency_ms"]
        print(
            f"{backend:>9}: ingest {figures['rate_overall']:>7} ep/s overall, {figures['rate_at_n']:>7} ep/s "
            f"at {args.n} stored; p50 {latency['p50']} ms, p99 {latency['p99']} ms; "
            f"{figures['bytes_per_episode']} B/episode; stream {stream} traces/s; curate {curate} traces/s"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
