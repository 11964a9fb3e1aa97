"""One validator round against N simulated miners on loopback: latency, judged per second, CPU, memory.

Usage: python bench/round.py [--sizes 16,64,256] [--tasks 2] [--products 20000] [--hosts 2] [--quick]

For each N: a local chain with N registered miners; `--hosts` processes share the N miners
(each serves its miners' real signed /v1/tasks apps on their own loopback ports, endpoints
served on chain) with a cheap deterministic agent that calls the validator's real tool server
(one search, one view, recommend, terminate). The validator runs in this process: its real
app (tool server) under uvicorn, task rotation, then one timed round (every miner gets every
task: N x --tasks episodes, each judged and stored in SQLite with durable commits). Figures:
round latency, trajectories judged and stored per second (of round time, and of judge time
alone), the validator's CPU seconds and peak/current RSS. Writes bench/results/round.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import uvicorn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arena.catalog import write_products  # noqa: E402 - the repo root must be importable first
from arena.synth import iter_synth_products  # noqa: E402
from arena.tools import ToolContext  # noqa: E402
from arena.toolserver import create_tool_router  # noqa: E402
from arena.types import FunctionCall, Message, ToolCall  # noqa: E402
from neurons import metrics  # noqa: E402
from neurons.chain.client import open_chain  # noqa: E402
from neurons.chain.local.state import create_local_chain  # noqa: E402
from neurons.chain.signing import make_nonce_store  # noqa: E402
from neurons.chain.wallets import create_wallet, hotkey_of, register_wallet  # noqa: E402
from neurons.miner.agents.contract import AgentOutput, AgentRequest, ToolCaller
from neurons.miner.app import create_miner_app  # noqa: E402
from neurons.miner.settings import MinerAppConfig  # noqa: E402
from neurons.validator.app import create_validator_app  # noqa: E402
from neurons.validator.components import open_validator  # noqa: E402
from neurons.validator.settings import ValidatorSettings  # noqa: E402
from tests.neurons.standins import serve_app  # noqa: E402

NETUID = 1


async def cheap_agent(request: AgentRequest, call_tool: ToolCaller) -> AgentOutput:
    """Search the query, view the first hit, recommend it, terminate: four real tool calls, no model."""
    messages = [Message(role="system", content="bench"), Message(role="user", content=request.query)]

    async def call(name: str, arguments: dict[str, Any]) -> str:
        call_id = f"call_{len(messages)}"
        tool_call = ToolCall(id=call_id, function=FunctionCall(name=name, arguments=json.dumps(arguments)))
        messages.append(Message(role="assistant", content=f"Calling {name}.", tool_calls=(tool_call,)))
        result = await call_tool(name, arguments, call_id)
        messages.append(Message(role="tool", tool_call_id=call_id, content=result.content))
        return result.content

    hits = json.loads(await call("find_product", {"q": request.query[:500], "page": 1}))
    first = hits[0]["product_id"] if isinstance(hits, list) and hits else "none"
    await call("view_product_information", {"product_ids": first})
    await call("recommend_product", {"product_ids": first})
    await call("terminate", {"status": "success"})
    return AgentOutput(messages=messages)


# ---------------------------------------------------------------------------- the miner host process


async def host_miners(chain_path: Path, wallets: Path, names: list[str], ports: list[int]) -> None:
    """Serve each named miner on its port (endpoint served on chain), then print ``ready`` and wait."""
    chains = [
        open_chain(
            "local",
            NETUID,
            wallet_name=n,
            wallet_hotkey="default",
            wallet_path=wallets,
            local_chain_path=chain_path,
        )
        for n in names
    ]
    snapshot = await chains[0].snapshot()

    async def metagraph() -> Any:  # one snapshot for every app: the bench measures the validator
        return snapshot

    async with AsyncExitStack() as stack:
        for chain, port in zip(chains, ports, strict=True):
            served = await chain.serve("127.0.0.1", port)
            if not served.success:
                raise RuntimeError(served.message)
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", port))
            app = create_miner_app(
                wallet=chain.wallet,
                agent=cheap_agent,
                metagraph=metagraph,
                nonce_store=make_nonce_store(),
                config=MinerAppConfig(metagraph_ttl=3600.0),
            )
            await stack.enter_async_context(serve_app(app, sock))
        print("ready", flush=True)
        await asyncio.Event().wait()


# ---------------------------------------------------------------------------- one size


def free_ports(n: int) -> list[int]:

    socks = [socket.socket() for _ in range(n)]
    for sock in socks:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in socks]
    for sock in socks:
        sock.close()
    return ports


def make_network(root: Path, n: int) -> None:
    owner = create_wallet(root / "wallets", "owner")
    coldkey = owner.coldkeypub.ss58_address
    chain = root / "chain.db"
    create_local_chain(
        chain,
        NETUID,
        owner_hotkey=hotkey_of(owner),
        owner_coldkey=coldkey,
        max_uids=n + 8,
        loopback_axons=True,
    )
    register_wallet(
        root / "chain.db", create_wallet(root / "wallets", "validator"), stake=1e4, validator_permit=True
    )
    for i in range(n):
        register_wallet(root / "chain.db", create_wallet(root / "wallets", f"m{i}"))


def start_hosts(root: Path, n: int, hosts: int) -> list[subprocess.Popen[str]]:
    names = [f"m{i}" for i in range(n)]
    ports = free_ports(n)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    processes = []
    for h in range(hosts):
        mine = slice(h, n, hosts)
        args = [sys.executable, __file__, "--host-miners", str(root), ",".join(names[mine])]
        args.append(",".join(str(p) for p in ports[mine]))
        processes.append(subprocess.Popen(args, env=env, stdout=subprocess.PIPE, text=True))
    for process in processes:
        line = process.stdout.readline() if process.stdout else ""
        if line.strip() != "ready":
            raise RuntimeError(f"miner host failed (exit {process.poll()})")
    return processes


def rss_mb() -> tuple[float, float]:
    """(current, peak) resident memory of this process in MiB."""
    current = 0.0
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            current = int(line.split()[1]) / 1024
    return current, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def measure(root: Path, catalog: Path, n: int, tasks: int) -> dict[str, Any]:
    port = free_ports(1)[0]
    settings = ValidatorSettings(
        network="local",
        local_chain=root / "chain.db",
        netuid=NETUID,
        wallet_name="validator",
        wallet_path=root / "wallets",
        host="127.0.0.1",
        port=port,
        data_dir=root / "validator",
        catalog=catalog,
        round={"tasks_per_round": tasks, "miners_per_round": 0, "episode_seconds": 120},
        pool={"min_held_out": tasks + 2, "batch": tasks + 8, "practice_share": 0.0, "never_touch_share": 0.0},
    )
    validator = open_validator(settings)
    app = create_validator_app(
        tool_router=create_tool_router(validator.registry, ToolContext(validator.index)),
        health=validator.health,
    )
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, lifespan="on"))
    serving = asyncio.create_task(server.serve())
    try:
        while not server.started:
            await asyncio.sleep(0.05)
        await validator.rotate_tasks()
        judge_before = metrics.JUDGE_DURATION.collect()[0]
        cpu_before = resource.getrusage(resource.RUSAGE_SELF)
        started = time.perf_counter()
        summary = await validator.round()
        seconds = time.perf_counter() - started
        cpu_after = resource.getrusage(resource.RUSAGE_SELF)
        judge_after = metrics.JUDGE_DURATION.collect()[0]
    finally:
        server.should_exit = True
        await serving
        await validator.aclose()
    judge_seconds = _sample(judge_after, "_sum") - _sample(judge_before, "_sum")
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    current, peak = rss_mb()
    return {
        "miners": n,
        "episodes": summary.stored + summary.not_sent + summary.failed,
        "stored": summary.stored,
        "ends": summary.ends,
        "not_sent": summary.not_sent,
        "failed": summary.failed,
        "round_seconds": round(seconds, 3),
        "judged_per_second": round(summary.stored / seconds, 1),
        "judge_seconds_per_trajectory_ms": round(1000 * judge_seconds / max(1, summary.stored), 2),
        "validator_cpu_seconds": round(cpu, 2),
        "validator_cpu_share": round(cpu / seconds, 2),
        "validator_rss_mb": round(current, 1),
        "validator_peak_rss_mb": round(peak, 1),
    }


def _sample(family: Any, suffix: str) -> float:
    return sum(s.value for s in family.samples if s.name.endswith(suffix))


def run_size(n: int, *, tasks: int, hosts: int, catalog: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"bench-round-{n}-") as tmp:
        root = Path(tmp)
        make_network(root, n)
        processes = start_hosts(root, n, min(hosts, n))
        try:
            return asyncio.run(measure(root, catalog, n, tasks))
        finally:
            for process in processes:
                process.terminate()
                process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="16,64,256")
    parser.add_argument("--tasks", type=int, default=2)
    parser.add_argument("--products", type=int, default=20000)
    parser.add_argument("--hosts", type=int, default=2, help="miner host processes")
    parser.add_argument("--quick", action="store_true", help="16 miners, 5000 products")
    parser.add_argument("--host-miners", nargs=3, metavar=("ROOT", "NAMES", "PORTS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.host_miners:
        root, names, ports = args.host_miners
        asyncio.run(
            host_miners(
                Path(root) / "chain.db",
                Path(root) / "wallets",
                names.split(","),
                [int(p) for p in ports.split(",")],
            )
        )
        return
    sizes = [16] if args.quick else [int(s) for s in args.sizes.split(",")]
    products = 5000 if args.quick else args.products
    with tempfile.TemporaryDirectory(prefix="bench-round-catalog-") as tmp:
        catalog = Path(tmp) / "catalog.jsonl"
        write_products(iter_synth_products(products, 11), catalog)
        results = []
        for n in sizes:
            result = run_size(n, tasks=args.tasks, hosts=args.hosts, catalog=catalog)
            results.append(result)
            print(json.dumps(result), flush=True)
    report = {
        "benchmark": "round",
        "products": products,
        "tasks_per_round": args.tasks,
        "miner_hosts": args.hosts,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load": os.getloadavg()},
        "note": "miners and validator share the machine's cores",
        "results": results,
    }
    out = ROOT / "bench" / "results" / "round.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
