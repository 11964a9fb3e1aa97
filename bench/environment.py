"""Environment throughput: steps per second in process and over HTTP at 1, 8 and 32 concurrent sessions.

A synthetic catalog of ``--size`` products is written and indexed once into ``--work``, and a
world is compiled over it (``arena.world.compile``, the default spec: a delta, vouchers, tasks
with held-back needs and changes mid-episode). The honest episode of every task is recorded once
(``tests/neurons/environment/oracle.py``: questions, searches, a view with a price claim, the
recommendation, ``terminate``); each measurement then replays those episodes over and over from
``C`` concurrent sessions for ``--seconds`` and counts the steps taken:

- ``process``: ``Environment.step`` from ``C`` threads of this process;
- ``http``: ``arena env serve`` on loopback (one uvicorn process), ``C`` sessions in flight from
  an asyncio client, one request per step.

Every step runs the tool over the world (BM25 over the whole index for a search), logs it, and
computes its turn reward from the judge's checks on the episode so far; the last one judges the
episode. ``--no-turn-rewards`` measures without the per-step judging. The figures are wall-clock
throughput on this machine as loaded when it ran (``load_average`` before and after).

Example: nice python bench/environment.py --size 100000 --seconds 20
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the honest episodes are the tests' oracle

from arena.index import build_index, open_index  # noqa: E402
from arena.synth import iter_synth_products  # noqa: E402
from arena.world.compile import compile_world  # noqa: E402
from arena.world.pack import save_pack  # noqa: E402
from neurons.environment.rewards import TurnRewardConfig  # noqa: E402
from neurons.environment.session import EnvConfig, Environment  # noqa: E402
from neurons.environment.tasks import EnvTasks, pack_tasks  # noqa: E402
from neurons.environment.types import Action  # noqa: E402
from tests.neurons.environment.oracle import solve  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "environment.json"
ARENA = [sys.executable, "-c", "from neurons.cli import main; main()"]
Script = tuple[str, list[Action]]  # a task id and the actions of its honest episode


def build(size: int, seed: int, work: Path) -> tuple[Path, Path]:
    """The index of a synthetic catalog and a world over it, built once per (size, seed)."""
    base = work / f"env-{size}-{seed}"
    index_dir, pack_dir = base / "index", base / "pack"
    if not (index_dir / "manifest.json").is_file():
        base.mkdir(parents=True, exist_ok=True)
        catalog = base / "catalog.jsonl"
        with catalog.open("w", encoding="utf-8") as out:
            for product in iter_synth_products(size, seed):
                out.write(product.model_dump_json() + "\n")
        build_index([catalog], index_dir)
        catalog.unlink()
    if not (pack_dir / "manifest.json").is_file():
        index = open_index(index_dir)
        save_pack(compile_world(f"bench-{seed}", index), pack_dir)
        index.close()
    return index_dir, pack_dir


def record(tasks: EnvTasks) -> list[Script]:
    """The honest episode of every task as its actions (a replay makes the same calls at the same seqs)."""
    env = Environment(tasks, EnvConfig(max_sessions=4))
    taken: dict[str, list[Action]] = {}
    step = env.step

    def recording(session_id: str, action: Action) -> Any:
        taken.setdefault(session_id, []).append(action)
        return step(session_id, action)

    env.step = recording  # type: ignore[method-assign]
    assert tasks.world is not None
    scripts = []
    for task in tasks.world.pack.tasks:
        play = solve(env, task)
        assert play.score == 1.0, task.task.task_id
        scripts.append((task.task.task_id, taken[play.outcomes[0].session_id]))
    return scripts


def _summary(steps: int, episodes: int, seconds: float, latencies: list[float]) -> dict[str, Any]:
    ordered = sorted(latencies)
    return {
        "steps": steps,
        "episodes": episodes,
        "seconds": round(seconds, 3),
        "steps_per_s": round(steps / seconds, 1),
        "episodes_per_s": round(episodes / seconds, 2),
        "step_p50_ms": round(ordered[len(ordered) // 2] * 1e3, 3) if ordered else None,
        "step_p99_ms": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1e3, 3)
        if ordered
        else None,
        "step_mean_ms": round(statistics.fmean(ordered) * 1e3, 3) if ordered else None,
    }


def in_process(
    tasks: EnvTasks, scripts: list[Script], concurrency: int, seconds: float, rewards: bool
) -> dict[str, Any]:
    """``concurrency`` threads replaying episodes on one ``Environment`` for ``seconds``."""
    env = Environment(tasks, EnvConfig(max_sessions=64, rewards=TurnRewardConfig(enabled=rewards)))
    stop = time.monotonic() + seconds
    lock = threading.Lock()
    latencies: list[float] = []
    counts = {"steps": 0, "episodes": 0}

    def worker(offset: int) -> None:
        mine: list[float] = []
        steps = episodes = 0
        n = offset
        while time.monotonic() < stop:
            task_id, actions = scripts[n % len(scripts)]
            session = env.reset(task_id=task_id).session_id
            for action in actions:
                started = time.perf_counter()
                env.step(session, action)
                mine.append(time.perf_counter() - started)
                steps += 1
            env.close(session)
            episodes, n = episodes + 1, n + 1
        with lock:
            latencies.extend(mine)
            counts["steps"] += steps
            counts["episodes"] += episodes

    began = time.monotonic()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(worker, range(concurrency)))
    return _summary(counts["steps"], counts["episodes"], time.monotonic() - began, latencies)


async def over_http(url: str, scripts: list[Script], concurrency: int, seconds: float) -> dict[str, Any]:
    """``concurrency`` sessions in flight against the server, replaying episodes for ``seconds``."""
    stop = time.monotonic() + seconds
    latencies: list[float] = []
    counts = {"steps": 0, "episodes": 0}
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=120.0, limits=limits) as client:

        async def worker(offset: int) -> None:
            n = offset
            while time.monotonic() < stop:
                task_id, actions = scripts[n % len(scripts)]
                reset = (await client.post("/v1/env/reset", json={"task_id": task_id})).json()
                path = f"/v1/env/sessions/{reset['session_id']}"
                for action in actions:
                    started = time.perf_counter()
                    answer = await client.post(f"{path}/step", content=action.model_dump_json())
                    answer.raise_for_status()
                    latencies.append(time.perf_counter() - started)
                    counts["steps"] += 1
                await client.delete(path)
                counts["episodes"] += 1
                n += 1

        began = time.monotonic()
        await asyncio.gather(*(worker(i) for i in range(concurrency)))
    return _summary(counts["steps"], counts["episodes"], time.monotonic() - began, latencies)


def serve(index_dir: Path, pack_dir: Path, port: int) -> subprocess.Popen[bytes]:
    """``arena env serve`` on loopback, healthy."""
    command = [
        *ARENA, "env", "serve", "--index", str(index_dir), "--world", str(pack_dir), "--port", str(port),
        "--max-sessions", "64", "--log-level", "WARNING",
    ]  # fmt: skip
    server = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"server exited: {server.stderr.read().decode() if server.stderr else ''}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2.0).status_code == 200:
                return server
        except httpx.TransportError:
            time.sleep(0.5)
    raise SystemExit("server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=100_000, help="products in the synthetic catalog")
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument(
        "--work", type=Path, default=Path("/tmp/arena-bench-env"), help="index and world cache"
    )
    parser.add_argument("--concurrency", default="1,8,32", help="comma-separated concurrent sessions")
    parser.add_argument("--seconds", type=float, default=20.0, help="wall time per measurement")
    parser.add_argument("--port", type=int, default=8797)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    load_start = os.getloadavg()
    started = time.monotonic()
    index_dir, pack_dir = build(args.size, args.seed, args.work)
    build_s = time.monotonic() - started
    base = open_index(index_dir)
    tasks = pack_tasks(pack_dir, base)
    scripts = record(tasks)
    levels = [int(c) for c in args.concurrency.split(",")]
    results: dict[str, Any] = {"process": {}, "http": {}}
    for level in levels:
        results["process"][str(level)] = in_process(tasks, scripts, level, args.seconds, rewards=True)
        print(f"process c={level}: {results['process'][str(level)]}", flush=True)
    results["process_without_turn_rewards"] = {
        "1": in_process(tasks, scripts, 1, args.seconds, rewards=False)
    }
    print(f"process c=1 no turn rewards: {results['process_without_turn_rewards']['1']}", flush=True)
    server = serve(index_dir, pack_dir, args.port)
    try:
        for level in levels:
            results["http"][str(level)] = asyncio.run(
                over_http(f"http://127.0.0.1:{args.port}", scripts, level, args.seconds)
            )
            print(f"http c={level}: {results['http'][str(level)]}", flush=True)
    finally:
        server.terminate()
        server.wait(timeout=30)
    report = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "load_average_start": list(load_start),
        "load_average_end": list(os.getloadavg()),
        "niceness": os.nice(0),
        "size": len(base),
        "world_id": tasks.world_id,
        "tasks": len(scripts),
        "steps_per_episode": round(statistics.fmean(len(a) for _, a in scripts), 2),
        "build_s": round(build_s, 1),
        "seconds_per_measurement": args.seconds,
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
