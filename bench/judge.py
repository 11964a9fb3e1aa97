"""Judging throughput: rule-based trajectories per second (1 process and N workers), LLM-judge latency.

Synthetic episodes over the 20-product fixture catalog, shaped like real ones (searches with
ten results, a view, a recommendation, terminate; reasoning that cites results), each with its
tool log. ``--sizes`` sets the number of searches per episode. With ``--judge-url`` the LLM
reasoning judge is timed on ``--llm-n`` episodes (latency per call and unscored count).

Example: python bench/judge.py --quick
Example: python bench/judge.py --sizes 2,8,20 --workers 2 --judge-url http://127.0.0.1:8000/v1 --judge-model m
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arena.catalog import iter_products  # noqa: E402
from arena.types import (  # noqa: E402
    FunctionCall,
    GoldItem,
    Message,
    PriceConstraint,
    Product,
    Task,
    ToolCall,
    ToolLogEntry,
    Trajectory,
    result_hash,
)
from judging.config import JudgeCalls  # noqa: E402
from judging.judge import JudgeConfig, judge  # noqa: E402
from judging.reasoning import OpenAICompleter  # noqa: E402
from judging.world import AtAnswer  # noqa: E402

CATALOG = ROOT / "tests" / "fixtures" / "catalog.jsonl"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def load_catalog() -> dict[str, Product]:
    return {p.product_id: p for p in iter_products([CATALOG])}


def episode(
    products: dict[str, Product], index: int, searches: int
) -> tuple[Task, Trajectory, list[ToolLogEntry]]:
    ids = sorted(products)
    gold = products[ids[index % len(ids)]]
    task = Task(
        intent="product",
        query=f"I want {gold.title.lower()} under {gold.price + 100:g} pesos (case {index})",
        gold=(
            GoldItem(
                product_id=gold.product_id,
                titles=(gold.title,),
                price=(PriceConstraint(mode="less than", high=gold.price + 100),),
            ),
        ),
    )
    messages = [
        Message(role="system", content="You are a shopping assistant."),
        Message(role="user", content=task.query),
    ]
    log: list[ToolLogEntry] = []
    rows = [
        {
            "product_id": p.product_id,
            "shop_id": p.shop_id,
            "title": p.title,
            "price": p.price,
            "service": list(p.service),
            "sold_count": p.sold_count + 1000 * index,
        }
        for p in list(products.values())[:10]
    ]
    pick = gold.product_id if index % 3 else ids[(index + 1) % len(ids)]
    calls: list[tuple[str, dict[str, Any], str, str]] = []
    for s in range(searches):
        q = " ".join(gold.title.lower().split()[: 2 + s % 3])
        calls.append(
            (
                "find_product",
                {"q": q, "page": 1 + s % 2},
                # Every result is unique (sold counts shift per episode and search): no cache hits.
                json.dumps(
                    [{**r, "sold_count": r["sold_count"] + s} for r in rows]
                    + [{"product_id": gold.product_id, "title": gold.title, "price": gold.price}]
                ),
                f"Searching '{q}'; the last results listed {rows[0]['product_id']} {rows[0]['title']} "
                f"at {rows[0]['price']}.",
            )
        )
    calls.append(
        (
            "view_product_information",
            {"product_ids": pick},
            json.dumps([products[pick].model_dump(mode="json")]),
            f"{pick} looks right at {products[pick].price:g}; "
            f"viewing it to compare with {rows[1]['product_id']}.",
        )
    )
    calls.append(
        (
            "recommend_product",
            {"product_ids": pick},
            json.dumps(f"Having recommended {pick}."),
            f"{pick} matches the title and price; recommending {pick}.",
        )
    )
    calls.append(("terminate", {"status": "success"}, json.dumps("done"), "Finished."))
    for n, (name, args, result, thought) in enumerate(calls):
        cid = f"call_{n}"
        messages.append(
            Message(
                role="assistant",
                reasoning_content=thought,
                tool_calls=(ToolCall(id=cid, function=FunctionCall(name=name, arguments=json.dumps(args))),),
            )
        )
        messages.append(Message(role="tool", tool_call_id=cid, content=result))
        log.append(
            ToolLogEntry(
                episode_id=f"e{index}",
                seq=n,
                call_id=cid,
                tool=name,
                arguments=args,
                result=result,
                result_hash=result_hash(result),
                status="ok",
                started_at=T0,
                finished_at=T0,
            )
        )
    traj = Trajectory(
        task_id=task.task_id, episode_id=f"e{index}", miner_hotkey="hk", messages=tuple(messages)
    )
    return task, traj, log


def judge_chunk(args: tuple[int, int, int]) -> tuple[int, float]:
    """Judge episodes [start, stop) with `searches` searches each, rule-based; return (count, seconds)."""
    start, stop, searches = args
    products = load_catalog()
    config = JudgeConfig()
    episodes = [episode(products, i, searches) for i in range(start, stop)]

    def lookup(ids: Any) -> dict[str, Product]:
        return {i: products[i] for i in ids if i in products}

    async def run() -> None:
        for task, traj, log in episodes:
            await judge(task, traj, log=log, against=AtAnswer(lookup), completer=None, config=config)

    async def warm() -> None:  # first-use costs (regex compilation, validators) are not throughput
        task, traj, log = episode(products, stop, searches)
        await judge(task, traj, log=log, against=AtAnswer(lookup), completer=None, config=config)

    asyncio.run(warm())
    began = time.perf_counter()
    asyncio.run(run())
    return len(episodes), time.perf_counter() - began


def timed(n: int, searches: int, workers: int) -> float:
    """Return trajectories judged per second (building the episodes is not timed)."""
    if workers <= 1:
        count, seconds = judge_chunk((0, n, searches))
        return count / seconds
    chunks = [(i * n // workers, (i + 1) * n // workers, searches) for i in range(workers)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        list(pool.map(judge_chunk, [(0, 1, searches)] * workers))  # start and warm the workers
        results = list(pool.map(judge_chunk, chunks))
    # The workers run side by side, so the slowest one's judging time is the wall time.
    return sum(c for c, _ in results) / max(s for _, s in results)


async def llm_latency(url: str, model: str, n: int) -> dict[str, Any]:
    products = load_catalog()
    completer = OpenAICompleter(url, model, timeout_s=120.0)
    config = JudgeConfig(calls=JudgeCalls(retries=0))
    latencies: list[float] = []
    unscored = 0

    def lookup(ids: Any) -> dict[str, Product]:
        return {i: products[i] for i in ids if i in products}

    for i in range(n):
        task, traj, log = episode(products, i, 3)
        began = time.perf_counter()
        j = await judge(task, traj, log=log, against=AtAnswer(lookup), completer=completer, config=config)
        latencies.append(time.perf_counter() - began)
        unscored += j.reasoning.value is None
    await completer.aclose()
    ordered = sorted(latencies)
    return {
        "model": model,
        "calls": n,
        "unscored": unscored,
        "latency_s_mean": round(statistics.fmean(latencies), 4),
        "latency_s_p50": round(ordered[len(ordered) // 2], 4),
        "latency_s_p95": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=2000, help="episodes per measurement")
    parser.add_argument("--sizes", default="2,8,20", help="searches per episode, comma-separated")
    parser.add_argument("--workers", type=int, default=2, help="worker processes for the parallel figure")
    parser.add_argument("--quick", action="store_true", help="200 episodes, one size")
    parser.add_argument("--judge-url", default=None)
    parser.add_argument("--judge-model", default="judge")
    parser.add_argument("--llm-n", type=int, default=20)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "judge.json")
    args = parser.parse_args()
    n = 200 if args.quick else args.n
    sizes = [2] if args.quick else [int(s) for s in args.sizes.split(",")]
    rows = []
    for searches in sizes:
        single = timed(n, searches, 1)
        parallel = timed(n, searches, args.workers)
        rows.append(
            {
                "searches": searches,
                "tool_calls": searches + 3,
                "per_s_1_process": round(single, 1),
                f"per_s_{args.workers}_workers": round(parallel, 1),
            }
        )
        print(f"searches={searches} judged/s 1 process={single:.1f} {args.workers} workers={parallel:.1f}")
    result: dict[str, Any] = {
        "name": "judge",
        "episodes": n,
        "workers": args.workers,
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "rule_based": rows,
    }
    if args.judge_url:
        result["llm"] = asyncio.run(llm_latency(args.judge_url, args.judge_model, args.llm_n))
        print(f"llm judge: {result['llm']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
