"""Conversion benchmark: the template writer's rate, whole conversions' rate, curation with and without.

Curation is measured with and without the conversion stage over the same stored traces.

The world: a synthetic catalog (``--products``) and its index, ``--tasks`` generated tasks, one
judged scripted-harness episode each (``tests/curation/conversion/world.py``: the axis-B
baseline through a logging caller, judged by the rule checks). Then:

- ``writer``: every trace's rationales written and verified (fact table, template writer,
  verifier; pruning decided, no replay, no re-judging), ``--repeat`` passes;
- ``convert``: the whole conversion per trace (pruning with its replay, writing, verification,
  re-judging, the step-classifier rewrites);
- ``detector``: the miner-level template signals of ``judging.axis`` over the converted set;
- ``curate``: ``--n`` stored traces (the episodes repeated under new episode ids) curated twice
  in the same run, into the same kind of export: today's funnel (no converter: B aside) and
  with conversion; the ratio is what the issue's "no slower than half" is checked against.

Everything runs with the collector thresholds ``arena curate`` and ``arena convert`` use
(``neurons.batch.batch_collector``); ``--default-gc`` keeps CPython's defaults, to compare.

Every figure has a wall-clock rate and a CPU rate (this process's CPU time: what the work
costs when another job shares the cores). ``digest`` fields hash what was produced (the
writer's trajectories of its last pass; every conversion's ``arena convert`` line; the JSONL
files of the export with conversion), so two
runs of one world on two versions of the code show whether the output changed.

Example: python bench/conversion.py
Example: python bench/conversion.py --tasks 100 --n 2000

Writes bench/results/conversion.json.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import platform
import resource
import sys
import tempfile
import time
from contextlib import nullcontext
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the harness traces are built by the tests' world

from arena.catalog import write_products  # noqa: E402
from arena.index import build_index, open_index  # noqa: E402
from arena.synth import iter_synth_products  # noqa: E402
from curation.config import CurationConfig  # noqa: E402
from curation.conversion.convert import Converter, ConverterSpec, convert_judged, run_now, source_hash  # noqa: E402
from curation.conversion.facts import task_facts  # noqa: E402
from curation.conversion.lines import conversion_line, converted_line  # noqa: E402
from curation.conversion.pool import (  # noqa: E402
    CHUNK,
    IN_PROCESS,
    START_AFTER,
    ConversionPool,
    Job,
    Workers,
    available_cores,
)
from curation.conversion.pruning import prune  # noqa: E402
from curation.conversion.results import Converted  # noqa: E402
from curation.conversion.template import TemplateWriter  # noqa: E402
from curation.conversion.writing import TraceWriter, memoised  # noqa: E402
from curation.export import curate_and_export  # noqa: E402
from judging.axis import axis_for_miner, narration_template_share  # noqa: E402
from neurons.batch import batch_collector  # noqa: E402
from storage import repository  # noqa: E402
from storage.db import make_engine, make_sessionmaker, upgrade  # noqa: E402
from storage.records import JudgedTrace  # noqa: E402
from storage.tasks import save_tasks  # noqa: E402
from tests.curation.conversion.world import readdressed, scripted_traces  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "conversion.json"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--products", type=int, default=20_000, help="synthetic catalog size")
    parser.add_argument("--tasks", type=int, default=300, help="distinct tasks (one harness episode each)")
    parser.add_argument("--repeat", type=int, default=3, help="writer passes over the traces")
    parser.add_argument("--n", type=int, default=6_000, help="stored traces to curate (episodes repeated)")
    parser.add_argument(
        "--workers", type=int, default=available_cores(), help="worker processes (pooled figures)"
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--default-gc", action="store_true", help="CPython's collector thresholds, not the batch commands'"
    )
    return parser.parse_args()


def _write(trace: JudgedTrace, writer: TemplateWriter, index: Any) -> Any:
    assert trace.trajectory is not None
    kept = prune(sorted(trace.tool_log, key=lambda e: e.seq)).kept
    seed = source_hash(trace.trajectory, trace.tool_log)
    writing = TraceWriter(
        trace.task, trace.trajectory, kept, task_facts(trace.task), seed, writer, memoised(index.products), 3
    )
    refused = run_now(lambda: writing.write(set(), 0))
    if refused:  # the verifier refused every attempt at a step: conversion drops such a trace
        return {"refused": refused}
    return writing.trajectory().to_wire()


def _writer_job(converter: Converter, trace: JudgedTrace) -> Any:
    """The writer pass of one trace, as a worker process runs it (on that worker's converter)."""
    assert isinstance(converter.writer, TemplateWriter)
    return _write(trace, converter.writer, converter.index)


def _convert_job(converter: Converter, trace: JudgedTrace) -> Any:
    """A whole conversion, as a worker process runs it: its ``arena convert`` line."""
    return converted_line(converter, trace)


def pooled_rate(
    job: Job[JudgedTrace, Any], traces: list[JudgedTrace], converter: Converter, workers: int, repeat: int
) -> dict[str, Any]:
    """``job`` over the traces ``repeat`` times on ``workers`` processes, after a warm-up that starts them.

    The start (spawning, imports, opening the index; about half a second of CPU per worker) is
    timed apart: a batch command pays it once per run. ``cpu_seconds`` is this process's CPU
    and the workers' together, start included (the workers' is read once they have exited).
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time()
    with ConversionPool(
        job, converter=converter, workers=Workers(workers), gc_threshold=gc.get_threshold()
    ) as pool:
        started = time.perf_counter()
        for trace in traces[: workers * CHUNK * 2]:  # every worker started, unmeasured
            pool.submit(trace)
        list(pool.rest())
        startup = time.perf_counter() - started
        out: list[Any] = []
        started = time.perf_counter()
        for _ in range(repeat):
            out = []
            for trace in traces:
                pool.submit(trace)
                out.extend(pool.ready())
            out.extend(pool.rest())
        seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    children = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    n = len(traces) * repeat
    return {
        "workers": workers,
        "traces": n,
        "seconds": round(seconds, 3),
        "rate": round(n / seconds, 1),
        "startup_seconds": round(startup, 3),
        "cpu_seconds": round(time.process_time() - cpu + children, 3),
        "digest": _digest(out),
    }


def _timed(n: int, seconds: float, cpu: float) -> dict[str, Any]:
    """Wall and CPU seconds of ``n`` traces, and the rate on each."""
    return {
        "seconds": round(seconds, 3),
        "rate": round(n / seconds, 1),
        "cpu_seconds": round(cpu, 3),
        "cpu_rate": round(n / cpu, 1),
    }


def writer_rate(traces: list[JudgedTrace], index: Any, repeat: int) -> dict[str, Any]:
    writer = TemplateWriter()
    written: list[Any] = []
    started, cpu = time.perf_counter(), time.process_time()
    for _ in range(repeat):
        written = [_write(trace, writer, index) for trace in traces]
    n = len(traces) * repeat
    timed = _timed(n, time.perf_counter() - started, time.process_time() - cpu)
    return {"traces": n, **timed, "digest": _digest(written)}


def _digest(lines: Any) -> str:
    digest = hashlib.sha256()
    for line in lines:
        digest.update(json.dumps(line, sort_keys=True, ensure_ascii=False).encode() + b"\n")
    return digest.hexdigest()[:16]


def convert_rate(traces: list[JudgedTrace], converter: Converter) -> tuple[dict[str, Any], list[Any]]:
    started, cpu = time.perf_counter(), time.process_time()
    results = [run_now(partial(convert_judged, trace, converter)) for trace in traces]
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    converted = [r for r in results if isinstance(r, Converted)]
    drops: dict[str, int] = {}
    for r in results:
        if not isinstance(r, Converted):
            drops[r.reason] = drops.get(r.reason, 0) + 1
    return (
        {
            "traces": len(traces),
            "converted": len(converted),
            "dropped": drops,
            "pruned_calls": sum(len(c.pruned) for c in converted),
            **_timed(len(traces), seconds, cpu),
            "digest": _digest(conversion_line(t, r) for t, r in zip(traces, results, strict=True)),
        },
        converted,
    )


def detector(converted: list[Converted]) -> dict[str, Any]:
    trajectories = [c.trajectory for c in converted]
    verdict = axis_for_miner(trajectories, [c.tool_log for c in converted])
    return {
        "trajectories": len(trajectories),
        "narration_template_share": round(narration_template_share(trajectories), 4),
        "call_template_share": verdict.template_share,
        "miner_label": verdict.label,
        "driven_share": verdict.driven_share,
    }


def curation(
    traces: list[JudgedTrace], n: int, converter: Converter, root: Path, workers: int
) -> dict[str, Any]:
    url = f"sqlite:///{root / 'bench.db'}"
    engine = make_engine(url)
    upgrade(engine)
    sessions = make_sessionmaker(engine)
    with sessions() as session:
        save_tasks(session, tasks=[t.task for t in traces])
        for i in range(n):
            trace = traces[i % len(traces)]
            copy = readdressed(trace, f"{trace.episode.episode_id}-{i // len(traces)}")
            repository.save_judged(
                session,
                episode=copy.episode,
                trajectory=copy.trajectory,
                tool_log=copy.tool_log,
                judgment=copy.judgment,
            )
    figures: dict[str, Any] = {"n": n}
    config = CurationConfig(split_by="none")
    runs = (
        ("today", None, IN_PROCESS),
        ("with_conversion", converter, IN_PROCESS),
        ("with_conversion_workers", converter, Workers(workers, START_AFTER)),  # as the commands run
    )
    for name, conv, count in runs:
        with sessions() as session:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started, cpu = time.perf_counter(), time.process_time()
            funnel = curate_and_export(
                session, root / f"export-{name}", config=config, converter=conv, workers=count
            )
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu += (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        stages = funnel["stages"]
        exported = sorted((root / f"export-{name}").rglob("*.jsonl"))
        figures[name] = {
            "workers": count.count,
            **_timed(n, seconds, cpu),
            "digest": _digest(f"{p.name}:{p.read_text(encoding='utf-8')}" for p in exported),
            "convert": {k: stages["convert"][k] for k in ("in", "out", "dropped", "notes")},
            "dedup": {k: stages["dedup"][k] for k in ("in", "out", "dropped")},
            "axis_aside": stages["axis"]["aside"],
            "exports": {k: sum(v.values()) for k, v in funnel["exports"].items()},
        }
    engine.dispose()
    figures["ratio"] = round(figures["with_conversion"]["rate"] / figures["today"]["rate"], 3)
    figures["cpu_ratio"] = round(figures["with_conversion"]["cpu_rate"] / figures["today"]["cpu_rate"], 3)
    figures["workers_ratio"] = round(figures["with_conversion_workers"]["rate"] / figures["today"]["rate"], 3)
    return figures


def main() -> None:
    args = parse_args()
    results: dict[str, Any] = {
        "benchmark": "conversion",
        "args": {k: str(v) for k, v in vars(args).items()},
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        },
    }
    results["gc"] = "default" if args.default_gc else "batch"
    with tempfile.TemporaryDirectory() as tmp, nullcontext() if args.default_gc else batch_collector():
        root = Path(tmp)
        write_products(iter_synth_products(args.products, 21), root / "catalog.jsonl")
        build_index([root / "catalog.jsonl"], root / "index")
        index = open_index(root / "index")
        started = time.perf_counter()
        traces = scripted_traces(index, args.tasks, seed=11)
        results["world"] = {
            "traces": len(traces),
            "successes": sum(t.judgment.success for t in traces),
            "seconds": round(time.perf_counter() - started, 2),
        }
        print(f"== {len(traces)} judged harness traces", file=sys.stderr)
        results["writer"] = writer_rate(traces, index, args.repeat)
        print(f"writer: {results['writer']['rate']} traces/s", file=sys.stderr)
        converter = ConverterSpec(index_dir=root / "index").open()
        results["writer_workers"] = pooled_rate(_writer_job, traces, converter, args.workers, args.repeat)
        print(
            f"writer on {args.workers} workers: {results['writer_workers']['rate']} traces/s", file=sys.stderr
        )
        results["convert"], converted = convert_rate(traces, converter)
        print(f"convert: {results['convert']['rate']} traces/s", file=sys.stderr)
        results["convert_workers"] = pooled_rate(_convert_job, traces, converter, args.workers, args.repeat)
        print(
            f"convert on {args.workers} workers: {results['convert_workers']['rate']} traces/s",
            file=sys.stderr,
        )
        results["detector"] = detector(converted)
        print(f"detector: {results['detector']}", file=sys.stderr)
        results["curate"] = curation(traces, args.n, converter, root, args.workers)
        converter.index.close()
        index.close()
    results["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    curate = results["curate"]
    writer, convert = results["writer"], results["convert"]
    today, both, pooled = curate["today"], curate["with_conversion"], curate["with_conversion_workers"]
    print(
        f"on {args.workers} workers: writer {results['writer_workers']['rate']} traces/s (digest "
        f"{results['writer_workers']['digest']}), conversion {results['convert_workers']['rate']} traces/s "
        f"(digest {results['convert_workers']['digest']}), curation with conversion {pooled['rate']} "
        f"traces/s (digest {pooled['digest']}): ratio {curate['workers_ratio']}"
    )
    print(
        f"writer {writer['rate']} traces/s (CPU {writer['cpu_rate']}; digest {writer['digest']}); "
        f"conversion {convert['rate']} traces/s "
        f"(CPU {convert['cpu_rate']}; {convert['converted']}/{convert['traces']} converted, digest "
        f"{convert['digest']}); curate {curate['n']} traces: today {today['rate']} traces/s (CPU "
        f"{today['cpu_rate']}), with conversion {both['rate']} traces/s (CPU {both['cpu_rate']}; digest "
        f"{both['digest']}): ratio {curate['ratio']} (CPU {curate['cpu_ratio']}); narration template share "
        f"{results['detector']['narration_template_share']}"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
