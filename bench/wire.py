"""Wire throughput: signed task request -> miner verify -> no-op agent -> signed answer -> client verify.

Usage: python bench/wire.py [--sizes 1,8,32] [--requests 1000] [--workers 1] [--quick]

A real miner process (`arena miner`, uvicorn, local chain, a no-op agent) on loopback is queried
by one `MinerClient` at each concurrency in --sizes. Figures per concurrency: completed queries
per second and latency p50/p95 (ms). Writes bench/results/wire.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arena.types import Message  # noqa: E402 - the repo root must be importable first
from neurons.chain.chaintypes import Neuron  # noqa: E402
from neurons.chain.client import open_chain  # noqa: E402
from neurons.chain.local.state import create_local_chain  # noqa: E402
from neurons.chain.wallets import create_wallet, hotkey_of, register_wallet  # noqa: E402
from neurons.miner.agents.contract import AgentOutput, AgentRequest, ToolCaller
from neurons.protocol import PROTOCOL_VERSION, TaskBudgets, TaskRequest  # noqa: E402
from neurons.validator.miner_client import MinerClient  # noqa: E402
from neurons.validator.settings import ClientLimits  # noqa: E402

NETUID = 1


async def noop_agent(request: AgentRequest, call_tool: ToolCaller) -> AgentOutput:
    """Answers at once: the bench measures the wire, not an agent."""
    return AgentOutput(
        messages=[Message(role="user", content=request.query), Message(role="assistant", content="p1")]
    )


def request(n: int) -> TaskRequest:
    return TaskRequest(
        protocol_version=PROTOCOL_VERSION,
        episode_id=f"ep-{n}",
        task_id="t-bench",
        query="a red kettle under 30 dollars",
        tool_server_url="http://127.0.0.1:9",
        episode_token="token",
        tools=({"type": "function", "function": {"name": "find_product", "parameters": {"type": "object"}}},),
        toolset="sb-1",
        deadline=datetime.now(UTC) + timedelta(seconds=60),
        budgets=TaskBudgets(max_tool_calls=10, max_seconds=60, max_response_bytes=1 << 20),
    )


def start_miner(root: Path, port: int, workers: int) -> subprocess.Popen[bytes]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("ARENA_")}
    # The repo root, not bench/, goes on the path: bench/storage.py would shadow the storage package.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["ARENA_NONCE_DB"] = str(root / "nonces.db")
    env["PROMETHEUS_MULTIPROC_DIR"] = str(root / "metrics")
    (root / "metrics").mkdir()
    arena = Path(sys.executable).parent / "arena"
    command = [
        str(arena), "miner", "--network", "local", "--local-chain", str(root / "chain.db"),
        "--netuid", str(NETUID), "--wallet-name", "miner", "--wallet-path", str(root / "wallets"),
        "--agent", "bench.wire:noop_agent", "--host", "127.0.0.1", "--port", str(port),
        "--workers", str(workers), "--log-level", "WARNING",
    ]  # fmt: skip
    return subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_healthy(base: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"miner exited: {process.communicate()[1].decode()[-2000:]}")
        try:
            if httpx.get(f"{base}/health", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit("miner did not start")


async def run_level(client: MinerClient, neuron: Neuron, size: int, total: int) -> tuple[list[float], float]:
    """Run ``total`` queries with ``size`` in flight; returns each latency and the wall time."""
    latencies: list[float] = []
    queue = iter(range(total))

    async def worker() -> None:
        for n in queue:
            started = time.perf_counter()
            reply = await client.query(neuron, request(n))
            if reply.end != "completed":
                raise SystemExit(f"query failed: {reply.end} {reply.detail}")
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(size)))
    return latencies, time.perf_counter() - started


async def measure(root: Path, sizes: list[int], total: int) -> list[dict[str, Any]]:
    wallets = root / "wallets"
    chain = open_chain("local", NETUID, wallet_name="validator", wallet_hotkey="default",
                       wallet_path=wallets, local_chain_path=root / "chain.db")  # fmt: skip
    neuron = (await chain.snapshot()).by_hotkey(hotkey_of(create_wallet(wallets, "miner")))
    await chain.close()
    assert neuron is not None and neuron.endpoint
    out = []
    async with MinerClient(
        create_wallet(wallets, "validator"), limits=ClientLimits(max_concurrency=max(sizes))
    ) as client:
        for size in sizes:
            latencies, seconds = await run_level(client, neuron, size, total)
            latencies.sort()
            row = {
                "concurrency": size,
                "requests": total,
                "per_s": total / seconds,
                "p50_ms": statistics.median(latencies) * 1000,
                "p95_ms": latencies[int(0.95 * (len(latencies) - 1))] * 1000,
            }
            print(
                f"concurrency={size:>3}  {row['per_s']:8.1f} req/s  "
                f"p50={row['p50_ms']:6.1f} ms  p95={row['p95_ms']:6.1f} ms"
            )
            out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,8,32", help="concurrency levels, comma-separated")
    parser.add_argument("--requests", type=int, default=1000, help="queries per concurrency level")
    parser.add_argument("--workers", type=int, default=1, help="miner uvicorn workers")
    parser.add_argument("--quick", action="store_true", help="60 queries per level")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    total = 60 if args.quick else args.requests
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        owner = create_wallet(root / "wallets", "owner")
        create_local_chain(
            root / "chain.db",
            NETUID,
            owner_hotkey=hotkey_of(owner),
            owner_coldkey=owner.coldkeypub.ss58_address,
        )
        register_wallet(
            root / "chain.db",
            create_wallet(root / "wallets", "validator"),
            stake=1000.0,
            validator_permit=True,
        )
        register_wallet(root / "chain.db", create_wallet(root / "wallets", "miner"))
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        process = start_miner(root, port, args.workers)
        try:
            wait_healthy(f"http://127.0.0.1:{port}", process)
            rows = asyncio.run(measure(root, sizes, total))
        finally:
            process.terminate()
            process.wait(timeout=30)
    result = {"args": vars(args), "workers": args.workers, "levels": rows}
    out = ROOT / "bench" / "results" / "wire.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
