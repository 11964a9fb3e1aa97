"""Benchmark the embedded local LLM: start-up time, latency per agent step, tokens per second.

Starts SmolLM2-135M under llama-cpp-python (``make install-local-llm``), runs the LLM agent on a few
shopping queries against canned tool results, and writes ``bench/results/local_llm.json``.
Skips (exit 0) when the local model is not installed.

Usage: python bench/local_llm.py [--queries N] [--steps N] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arena.types import ToolResult  # noqa: E402
from neurons.demo.local_llm import LocalLLM, agent_options, server_available  # noqa: E402
from neurons.miner.agents.contract import AgentRequest
from neurons.miner.agents.llm import make_llm_agent  # noqa: E402

QUERIES = [
    "Show me chili powder in a bag priced above 300 pesos.",
    "I'm looking for creatine powder sachets.",
    "Looking for a 12 inch heavy-duty rubber wheel for a pushcart.",
    "Show me luggage covers priced above 81 PHP.",
    "Looking for a crash cymbal with free shipping.",
    "Show me cycling shoes in size 42.5 for biking, priced from 698 to 3949 PHP.",
]
HITS = [
    {
        "product_id": str(4000 + i),
        "shop_id": "s8",
        "title": title,
        "price": price,
        "service": ["COD"],
        "sold_count": i,
    }
    for i, (title, price) in enumerate(
        [
            ("Hyco Chili Powder 1 kilo Bag", 390.0),
            ("Travel Luggage Cover Elastic", 120.0),
            ("Rubber Wheel 12 inch", 650.0),
        ]
    )
]


def tools() -> list[dict[str, Any]]:
    sys.path.insert(0, str(ROOT / "tests" / "neurons"))
    from test_local_llm import sb1_tools  # the same schemas the marked test uses

    return sb1_tools()


class Timed:
    """Canned tool results; the agent's wall time minus tool time is model time."""

    async def __call__(
        self, name: str, arguments: dict[str, Any], call_id: str, *, raw: str | None = None
    ) -> ToolResult:
        if name == "find_product":
            return ToolResult(content=json.dumps(HITS))
        if name == "view_product_information":
            return ToolResult(content=json.dumps([{**h, "attributes": {}, "sku_options": {}} for h in HITS]))
        return ToolResult(content=json.dumps({"ok": name}))


async def run(queries: list[str], steps: int, llm: LocalLLM) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    schemas = tools()
    async with make_llm_agent(llm.base_url, llm.model, **agent_options()) as agent:
        for query in queries:
            started = time.perf_counter()
            out = await agent(
                AgentRequest(
                    task_id="b",
                    episode_id="b",
                    query=query,
                    tools=tuple(schemas),
                    max_steps=steps,
                    deadline_s=600,
                ),
                Timed(),
            )
            seconds = time.perf_counter() - started
            calls = [c for m in out.messages if m.role == "assistant" for c in m.tool_calls or ()]
            valid = 0
            for call in calls:
                try:
                    valid += isinstance(json.loads(call.function.arguments), dict)
                except json.JSONDecodeError:
                    pass
            turns = sum(m.role == "assistant" for m in out.messages)
            usage = out.usage
            rows.append(
                {
                    "query": query,
                    "stop": out.stop,
                    "turns": turns,
                    "tool_calls": len(calls),
                    "valid_json_calls": valid,
                    "tools_called": [c.function.name for c in calls],
                    "seconds": round(seconds, 2),
                    "seconds_per_turn": round(seconds / max(turns, 1), 2),
                    "prompt_tokens": usage.prompt_tokens if usage else 0,
                    "completion_tokens": usage.completion_tokens if usage else 0,
                }
            )
            print(json.dumps(rows[-1]))
    return {"episodes": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=len(QUERIES))
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="2 queries, 3 steps")
    args = parser.parse_args()
    if not server_available():
        print("local_llm: skipped (the local model is not installed; run `make install-local-llm`)")
        return
    queries, steps = (QUERIES[:2], 3) if args.quick else (QUERIES[: args.queries], args.steps)
    started = time.perf_counter()
    log_path = Path(tempfile.gettempdir()) / "arena-local-llm-bench.log"
    with LocalLLM(threads=args.threads, log_path=log_path) as llm:
        startup = time.perf_counter() - started
        result = asyncio.run(run(queries, steps, llm))
    episodes = result["episodes"]
    seconds = sum(e["seconds"] for e in episodes)
    calls = sum(e["tool_calls"] for e in episodes)
    summary = {
        "startup_seconds": round(startup, 2),
        "episodes": len(episodes),
        "turns": sum(e["turns"] for e in episodes),
        "tool_calls": calls,
        "valid_json_call_rate": round(sum(e["valid_json_calls"] for e in episodes) / calls, 3)
        if calls
        else None,
        "median_seconds_per_turn": statistics.median(e["seconds_per_turn"] for e in episodes),
        # Processing rate over everything the server did (prompt and generated tokens).
        "tokens_per_second": round(
            sum(e["prompt_tokens"] + e["completion_tokens"] for e in episodes) / seconds, 1
        )
        if seconds
        else None,
        "completion_tokens_per_second": round(sum(e["completion_tokens"] for e in episodes) / seconds, 1)
        if seconds
        else None,
    }
    print(json.dumps(summary, indent=2))
    out = ROOT / "bench" / "results" / "local_llm.json"
    out.write_text(json.dumps({"summary": summary, **result}, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
