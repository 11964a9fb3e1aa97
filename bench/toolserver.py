"""Tool server benchmark: tool cost in process and over HTTP (loopback), server CPU per call, their ratio.

For each catalog size, a synthetic catalog (``arena.synth``) is written and indexed once into
``--work``; then

- ``in_process``: ``run_tool`` latency and CPU time of find_product (1-3 title words, a
  filter on a third of the calls, a sort on half) and of view_product_information (3 ids);
- ``http``: the same calls through ``arena tools serve --practice`` on loopback, one tool at a
  time and one call at a time (``serial``: client latency, and the server process's own CPU
  time per call, read from ``/proc/<pid>/stat`` before and after the batch, so a busy shared
  machine does not inflate it), then all of them with ``--concurrency`` in flight (calls/s
  and server CPU per call);
- ``ratio``: server CPU per call over in-process CPU per call, per tool (the HTTP, token, log
  and encoding overhead on top of the tool itself: 1.0 would be free);
- ``slowest_find_product_ms``: the CPU time of the most expensive queries we build (the most
  common title words of the sample, up to 512 characters, with and without sort and filters),
  in process: what a call can cost the event loop (``arena.toolcalls.ON_LOOP_MAX_PRODUCTS``).

``--before DIR`` also runs the server from the source tree ``DIR`` (e.g. a detached worktree
of main, put first on the server's ``PYTHONPATH``) on the same index and calls, alternating
with this tree ``--repeat`` times, so before and after are measured in the same run.

Example: python bench/toolserver.py --sizes 100000,1000000 --before /tmp/main-wt --repeat 2
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import platform
import random
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from arena.index import build_index, open_index
from arena.synth import iter_synth_products
from arena.tools import ToolContext, run_tool

RESULTS = Path(__file__).parent / "results" / "toolserver.json"
ARENA = [sys.executable, "-c", "from neurons.cli import main; main()"]


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {
        "p50_ms": round(pick(0.50) * 1e3, 3),
        "p99_ms": round(pick(0.99) * 1e3, 3),
        "mean_ms": round(statistics.fmean(ordered) * 1e3, 3),
    }


def build(size: int, seed: int, work: Path) -> tuple[Path, list[tuple[str, str]]]:
    """Write and index a synthetic catalog once per (size, seed); return the index and (id, title) pairs."""
    base = work / f"synth-{size}-{seed}"
    catalog, index_dir, sample = base / "catalog.jsonl", base / "index", base / "sample.json"
    if not (index_dir / "manifest.json").is_file() or not sample.is_file():
        base.mkdir(parents=True, exist_ok=True)
        picked: list[tuple[str, str]] = []
        rng = random.Random(seed)
        with catalog.open("w", encoding="utf-8") as out:
            for product in iter_synth_products(size, seed):
                out.write(product.model_dump_json() + "\n")
                if rng.random() < 2000 / size:
                    picked.append((product.product_id, product.title))
        build_index([catalog], index_dir)
        sample.write_text(json.dumps(picked))
    return index_dir, [tuple(p) for p in json.loads(sample.read_text())]  # type: ignore[misc]


def make_calls(sample: list[tuple[str, str]], n: int, seed: int) -> list[tuple[str, dict[str, Any]]]:
    rng = random.Random(seed)
    calls: list[tuple[str, dict[str, Any]]] = []
    for i in range(n):
        if i % 4 == 3:
            ids = ",".join(rng.choice(sample)[0] for _ in range(3))
            calls.append(("view_product_information", {"product_ids": ids}))
            continue
        words = rng.choice(sample)[1].split()
        start = rng.randrange(len(words))
        args: dict[str, Any] = {
            "q": " ".join(words[start : start + rng.randint(1, 3)]),
            "page": rng.randint(1, 2),
        }
        if rng.random() < 1 / 6:
            args["price"] = rng.choice(["100-2000", "-500", "1000-"])
        elif rng.random() < 1 / 5:
            args["service"] = rng.choice(["COD", "official", "freeShipping,COD"])
        if rng.random() < 1 / 2:
            args["sort"] = rng.choice(["priceasc", "pricedesc", "order"])
        calls.append(("find_product", args))
    return calls


def bench_in_process(index_dir: Path, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    index = open_index(index_dir)
    ctx = ToolContext(index=index)
    for name, args in calls[:20]:  # warm the page cache and the interpreter's caches, as the server is
        run_tool(name, args, ctx)
    by_tool: dict[str, list[float]] = {}
    cpu: dict[str, float] = {}
    for name, args in calls:
        start, start_cpu = time.perf_counter(), time.process_time()
        run_tool(name, args, ctx)
        cpu[name] = cpu.get(name, 0.0) + time.process_time() - start_cpu
        by_tool.setdefault(name, []).append(time.perf_counter() - start)
    index.close()
    return {
        name: {**percentiles(samples), "cpu_ms_per_call": round(cpu[name] / len(samples) * 1e3, 3)}
        for name, samples in by_tool.items()
    }


def bench_slowest(index_dir: Path, sample: list[tuple[str, str]]) -> dict[str, float]:
    """In-process CPU of the most expensive find_product calls we can build from common title words."""
    counts = collections.Counter(word.lower() for _, title in sample for word in title.split())
    common = [word for word, _ in counts.most_common(80)]
    index = open_index(index_dir)
    ctx = ToolContext(index=index)
    slowest: dict[str, float] = {}
    for words in (5, 40, 80):
        query = " ".join(common[:words])[:512]
        filtered = {"service": "COD,official,freeShipping", "price": "1-2", "page": 5}
        for extra in ({}, {"sort": "priceasc"}, filtered):
            args = {"q": query, "page": 1, **extra}
            run_tool("find_product", args, ctx)  # warm
            start = time.process_time()
            for _ in range(3):
                run_tool("find_product", args, ctx)
            cpu_ms = (time.process_time() - start) / 3 * 1e3
            slowest[f"{words}_words"] = round(max(slowest.get(f"{words}_words", 0.0), cpu_ms), 2)
    index.close()
    return slowest


def process_cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process (all its threads), from ``/proc/<pid>/stat``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(index_dir: Path, calls: int, src: Path | None) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = dict(os.environ)
    if src is not None:  # the server imports arena and neurons from that tree
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), env.get("PYTHONPATH", "")]))
    # ``python -c`` puts the working directory before PYTHONPATH: run in the tree it should import
    # (from the repository root, a --before server would otherwise import this tree).
    cwd = src if src is not None else Path(__file__).resolve().parent.parent
    proc = subprocess.Popen(
        [
            *ARENA,
            "tools",
            "serve",
            "--index",
            str(index_dir.resolve()),
            "--practice",
            "--port",
            str(port),
            "--max-calls",
            str(calls + 10),
            "--max-seconds",
            "3600",
            "--log-level",
            "WARNING",
        ],
        env=env,
        cwd=cwd,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600  # a loaded machine imports slowly
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("tool server did not start")


def bench_http(
    index_dir: Path, calls: list[tuple[str, dict[str, Any]]], concurrency: int, src: Path | None = None
) -> dict[str, Any]:
    proc, url = start_server(index_dir, 2 * len(calls) + 40, src)
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            token = client.post("/v1/practice/episodes").json()["token"]
            headers = {"Authorization": f"Bearer {token}"}
            for i, (name, args) in enumerate(calls[:20]):  # warm-up, as in process
                client.post(f"/v1/tools/{name}", json=args, headers={**headers, "X-Arena-Call-Id": f"w{i}"})
            serial: dict[str, Any] = {}
            for tool in dict.fromkeys(name for name, _ in calls):
                samples: list[float] = []
                cpu_before = process_cpu_seconds(proc.pid)
                for i, (name, args) in enumerate(calls):
                    if name != tool:
                        continue
                    start = time.perf_counter()
                    response = client.post(
                        f"/v1/tools/{name}", json=args, headers={**headers, "X-Arena-Call-Id": f"s{i}"}
                    )
                    samples.append(time.perf_counter() - start)
                    response.raise_for_status()
                cpu = process_cpu_seconds(proc.pid) - cpu_before
                serial[tool] = {
                    **percentiles(samples),
                    "server_cpu_ms_per_call": round(cpu / len(samples) * 1e3, 3),
                }
        cpu_before = process_cpu_seconds(proc.pid)
        qps = asyncio.run(concurrent_qps(url, token, calls, concurrency))
        cpu = process_cpu_seconds(proc.pid) - cpu_before
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {
        "serial": serial,
        "concurrent_calls_per_s": qps,
        "concurrent_server_cpu_ms_per_call": round(cpu / len(calls) * 1e3, 3),
    }


def ratios(in_process: dict[str, Any], http: dict[str, Any]) -> dict[str, float]:
    """Server CPU per call over in-process CPU per call, per tool."""
    return {
        tool: round(http["serial"][tool]["server_cpu_ms_per_call"] / measured["cpu_ms_per_call"], 2)
        for tool, measured in in_process.items()
    }


async def concurrent_qps(
    url: str, token: str, calls: list[tuple[str, dict[str, Any]]], concurrency: int
) -> float:
    queue = list(enumerate(calls))
    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:

        async def worker() -> None:
            while queue:
                i, (name, args) = queue.pop()
                try:
                    response = await client.post(
                        f"/v1/tools/{name}", json=args, headers={**headers, "X-Arena-Call-Id": f"c{i}"}
                    )
                except httpx.TransportError:  # a kept-alive connection the server closed (loaded machine)
                    queue.append((i, (name, args)))
                    continue
                response.raise_for_status()

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return round(len(calls) / (time.perf_counter() - start), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated catalog sizes")
    parser.add_argument("--quick", action="store_true", help="one small size, few calls (a smoke run)")
    parser.add_argument("--calls", type=int, default=400, help="calls per measurement")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--work", type=Path, default=Path("/tmp/arena-bench-toolserver"))
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--before", type=Path, help="also run the server from this source tree (before)")
    parser.add_argument("--repeat", type=int, default=1, help="measurements per server, alternated")
    opts = parser.parse_args()
    sizes = [2000] if opts.quick else [int(s) for s in opts.sizes.split(",")]
    n_calls = 80 if opts.quick else opts.calls
    report: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "load_average_start": os.getloadavg(),
        "calls": n_calls,
        "before": str(opts.before) if opts.before else None,
        "concurrency": opts.concurrency,
        "sizes": {},
    }
    for size in sizes:
        index_dir, sample = build(size, opts.seed, opts.work)
        calls = make_calls(sample, n_calls, opts.seed)
        result: dict[str, Any] = {"runs": [], "slowest_find_product_ms": bench_slowest(index_dir, sample)}
        print(f"size={size} slowest_find_product_ms={json.dumps(result['slowest_find_product_ms'])}")
        for _ in range(opts.repeat):
            run: dict[str, Any] = {"in_process": bench_in_process(index_dir, calls)}
            if opts.before is not None:
                run["http_before"] = bench_http(index_dir, calls, opts.concurrency, opts.before)
                run["ratio_before"] = ratios(run["in_process"], run["http_before"])
            run["http"] = bench_http(index_dir, calls, opts.concurrency)
            run["ratio"] = ratios(run["in_process"], run["http"])
            result["runs"].append(run)
            print(f"size={size} {json.dumps(run)}", flush=True)
        report["sizes"][str(size)] = result
    report["load_average_end"] = os.getloadavg()
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {opts.out}")


if __name__ == "__main__":
    main()
