"""Tool server benchmark: tool latency in process and over HTTP (loopback), and HTTP throughput.

For each catalog size, a synthetic catalog (``arena.synth``) is written and indexed once into
``--work``; then

- ``in_process``: ``run_tool`` latency of find_product (1-3 title words, a filter on a third
  of the calls, a sort on half) and of view_product_information (3 ids);
- ``http_serial``: the same calls through ``arena tools serve --practice`` on loopback, one at
  a time (token check, body caps, thread pool, logging included);
- ``http_concurrent``: calls/s with ``--concurrency`` calls in flight.

Example: python bench/toolserver.py --sizes 10000,100000
"""

from __future__ import annotations

import argparse
import asyncio
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
    by_tool: dict[str, list[float]] = {}
    for name, args in calls:
        start = time.perf_counter()
        run_tool(name, args, ctx)
        by_tool.setdefault(name, []).append(time.perf_counter() - start)
    index.close()
    return {name: percentiles(samples) for name, samples in by_tool.items()}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(index_dir: Path, calls: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [
            *ARENA,
            "tools",
            "serve",
            "--index",
            str(index_dir),
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
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("tool server did not start")


def bench_http(index_dir: Path, calls: list[tuple[str, dict[str, Any]]], concurrency: int) -> dict[str, Any]:
    proc, url = start_server(index_dir, 2 * len(calls))
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            token = client.post("/v1/practice/episodes").json()["token"]
            headers = {"Authorization": f"Bearer {token}"}
            by_tool: dict[str, list[float]] = {}
            for i, (name, args) in enumerate(calls):
                start = time.perf_counter()
                response = client.post(
                    f"/v1/tools/{name}", json=args, headers={**headers, "X-Arena-Call-Id": f"s{i}"}
                )
                by_tool.setdefault(name, []).append(time.perf_counter() - start)
                response.raise_for_status()
        qps = asyncio.run(concurrent_qps(url, token, calls, concurrency))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {"serial": {n: percentiles(s) for n, s in by_tool.items()}, "concurrent_calls_per_s": qps}


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
                response = await client.post(
                    f"/v1/tools/{name}", json=args, headers={**headers, "X-Arena-Call-Id": f"c{i}"}
                )
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
    opts = parser.parse_args()
    sizes = [2000] if opts.quick else [int(s) for s in opts.sizes.split(",")]
    n_calls = 80 if opts.quick else opts.calls
    report: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "calls": n_calls,
        "concurrency": opts.concurrency,
        "sizes": {},
    }
    for size in sizes:
        index_dir, sample = build(size, opts.seed, opts.work)
        calls = make_calls(sample, n_calls, opts.seed)
        result = {
            "in_process": bench_in_process(index_dir, calls),
            "http": bench_http(index_dir, calls, opts.concurrency),
        }
        report["sizes"][str(size)] = result
        print(f"size={size} {json.dumps(result)}")
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {opts.out}")


if __name__ == "__main__":
    main()
