"""Agreement benchmark: two validators with different round secrets weigh the same miners (Spearman).

Since round secrets (issue 27) each validator serves a world of its own, so validators agree by
measuring the same distribution, not by running identical worlds. This measures how far: for
each world round ``k`` both validators compile their world from one seed block hash (here
``sha256("bench-block", k)``: no chain is needed to draw it) and their own secret of round ``k``
(``arena.world.commitment``), every miner plays every task of each world in process (the tool
calls logged as the tool server logs them, a world task's shopper where it can ask), each episode
is judged by the rules (``judging.judge.judge_rules``; no LLM), and each validator turns its own
scores into weights with the validator's policy (``judging.scores``: the Wilson lower bound of
the windowed mean). The samples carry no work, so no credit is shared: the graded miners are one
agent on subsets of the tasks, which the copy rule (``judging.duplicates``) would rightly link.
Reported, after each round: the Spearman rank correlation of the two weight vectors, and of each
with the miners' true order (their mean score over both validators' worlds and every round),
with the trivial baselines: validators on one world (1 by construction) and a validator that
weighs at random (its mean |rho| over 1000 draws).

Miners, from strong to none: the scripted reference agent (asks the shopper), the same viewing
one candidate only, the same without ``ask_user``, the same on half and on a quarter of the
tasks (quitting on the rest), a guesser (search the request, view and take the top hit), and a
quitter (terminates at once).

Every (validator, round) is checkpointed under ``--work`` (its per-episode records as JSONL);
a killed run resumes there (``seconds_this_run`` times only what the invocation ran). Run it under
nice: ``nice python bench/agreement.py --rounds 48``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import hashlib
import json
import os
import platform
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from arena.catalog import write_products
from arena.episode import Budgets, EpisodeRegistry, EpisodeTokens, InMemoryToolLog
from arena.index import SearchIndex, build_index, open_index
from arena.synth import iter_synth_products
from arena.tools import ToolContext, tool_schemas
from arena.types import FunctionCall, Message, Task, ToolCall
from arena.world.commitment import SecretChain
from arena.world.compile import compile_world
from arena.world.seed import round_seed
from judging.config import JudgeConfig
from judging.judge import judge_rules, judge_unanswered
from judging.scores import ScorePolicy, ScoreSample, standings, weight_vector
from judging.world import WorldJudging
from neurons.evaluation.runner import in_process_caller
from neurons.miner.agents.contract import Agent, AgentOutput, AgentRequest, ToolCaller
from neurons.miner.agents.scripted import scripted_agent

RESULTS = Path(__file__).parent / "results" / "agreement.json"
RECORDS = "agreement-records.jsonl"  # next to --out: per (validator, round, miner), its scores in task order
TOOLSET = "arena-3"
NETUID = 1
VALIDATORS = ("validator-a", "validator-b")


async def _plain(request: AgentRequest, call_tool: ToolCaller, pick: str) -> AgentOutput:
    """Search the request, view and recommend its top hit, stop; ``quit``: stop at once."""
    messages = [Message(role="system", content="shop"), Message(role="user", content=request.query)]

    async def call(name: str, arguments: dict[str, Any]) -> str:
        call_id = f"call_{len(messages)}"
        result = await call_tool(name, arguments, call_id)
        tool_call = ToolCall(id=call_id, function=FunctionCall(name=name, arguments=json.dumps(arguments)))
        messages.extend(
            [
                Message(role="assistant", tool_calls=(tool_call,)),
                Message(role="tool", tool_call_id=call_id, content=result.content),
            ]
        )
        return result.content

    if pick != "quit":
        try:
            hits = json.loads(await call("find_product", {"q": request.query}))
        except ValueError:
            hits = []
        ids = [str(h["product_id"]) for h in hits if isinstance(h, dict) and "product_id" in h]
        if ids:
            chosen = ids[0]
            await call("view_product_information", {"product_ids": chosen})
            await call("recommend_product", {"product_ids": chosen})
    await call("terminate", {"status": "success"})
    return AgentOutput(messages=messages)


def _no_ask(agent: Agent) -> Agent:
    async def run(request: AgentRequest, call_tool: ToolCaller) -> AgentOutput:
        tools = tuple(t for t in request.tools if t.get("function", {}).get("name") != "ask_user")
        return await agent(request.model_copy(update={"tools": tools}), call_tool)

    return run


def _some(agent: Agent, share: int) -> Agent:
    """``agent`` on one task in ``share`` (by the request's hash), a quitter on the others."""

    async def run(request: AgentRequest, call_tool: ToolCaller) -> AgentOutput:
        if hashlib.sha256(request.query.encode()).digest()[0] % share == 0:
            return await agent(request, call_tool)
        return await _plain(request, call_tool, pick="quit")

    return run


MINERS: dict[str, Agent] = {
    "scripted": scripted_agent,
    "scripted-view-1": functools.partial(scripted_agent, view_top=1),
    "scripted-no-ask": _no_ask(scripted_agent),
    "scripted-half": _some(scripted_agent, 2),
    "scripted-quarter": _some(scripted_agent, 4),
    "guesser": functools.partial(_plain, pick="top"),
    "quitter": functools.partial(_plain, pick="quit"),
}


def base_index(size: int, seed: int, work: Path) -> Path:
    """The synthetic base index (built once under ``work``)."""
    index_dir = work / f"base-{size}-{seed}" / "index"
    if not (index_dir / "manifest.json").is_file():
        catalog = index_dir.parent / "catalog.jsonl"
        index_dir.parent.mkdir(parents=True, exist_ok=True)
        write_products(iter_synth_products(size, seed), catalog)
        build_index([catalog], index_dir)
        catalog.unlink()
    return index_dir


async def play(world: WorldJudging, task: Task, agent: Agent, config: JudgeConfig) -> float:
    """One episode of ``agent`` on ``task`` in process, judged by the rules; its score."""
    registry = EpisodeRegistry(EpisodeTokens(os.urandom(32)), InMemoryToolLog())
    ctx = ToolContext(world.overlay, TOOLSET)
    shopper = world.shopper(task.task_id, TOOLSET)
    episode_id, token = registry.open_episode(
        "task", "bench-miner", Budgets(30, 120.0), context=ctx, shopper=shopper
    )
    request = AgentRequest(
        task_id="task",
        episode_id=episode_id,
        query=task.query,
        tools=tuple(tool_schemas(TOOLSET)),
        max_steps=20,
    )
    try:
        output = await asyncio.wait_for(agent(request, in_process_caller(registry, token, ctx)), 120.0)
    except Exception:  # an agent's fault is a zero, as a miner's error is
        output = None
    log = registry.log(episode_id)
    if output is None:
        judgment = judge_unanswered(
            task, episode_id=episode_id, miner_hotkey="bench-miner", end="miner_error", config=config
        )
    else:
        trajectory = output.trajectory(request, "bench-miner").model_copy(update={"task_id": task.task_id})
        judgment = judge_rules(
            task, trajectory, log=log, against=world.against(task, log, TOOLSET), config=config
        )
    return judgment.score


def block_hash(round_index: int) -> bytes:
    """The round's seed block hash (one for both validators, as one chain gives them)."""
    return hashlib.sha256(b"bench-block" + round_index.to_bytes(8, "big")).digest()


async def run_round(base: SearchIndex, validator: str, k: int) -> list[dict[str, Any]]:
    """Every miner on every task of ``validator``'s world ``k``: one record per episode."""
    secret = SecretChain(hashlib.sha256(validator.encode()).digest(), NETUID, 0).secret(k + 1)
    seed = round_seed(block_hash(k), netuid=NETUID, round_index=k + 1, secret=secret)
    pack = await asyncio.to_thread(compile_world, seed, base)
    world = WorldJudging.over(pack, base)
    config = JudgeConfig(toolset=TOOLSET, catalog_version=base.catalog_version)
    records = []
    for compiled in pack.tasks:
        for miner, agent in MINERS.items():
            score = await play(world, compiled.task, agent, config)
            records.append({"validator": validator, "round": k, "world_id": pack.manifest.world_id,
                            "task_id": compiled.task.task_id, "miner": miner, "score": score})  # fmt: skip
    return records


def ranks(values: Sequence[float]) -> np.ndarray:
    """Average ranks (ties share the mean of their positions)."""
    array = np.asarray(values, dtype=float)
    order = array.argsort(kind="stable")
    result = np.empty(len(array))
    result[order] = np.arange(len(array), dtype=float)
    for value in np.unique(array):
        tied = array == value
        result[tied] = result[tied].mean()
    return result


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman's rank correlation (None where one side is constant)."""
    ra, rb = ranks(a), ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return None
    return round(float(np.corrcoef(ra, rb)[0, 1]), 4)


def weights(records: Sequence[dict[str, Any]], policy: ScorePolicy) -> list[float]:
    """One validator's weight per miner (``MINERS`` order) from its records, as its weights job forms them."""
    samples = [ScoreSample(hotkey=r["miner"], score=r["score"], order=i) for i, r in enumerate(records)]
    uid_of = {miner: uid for uid, miner in enumerate(MINERS, start=1)}
    uids, values = weight_vector(standings(samples, policy), uid_of, owner_uid=0, policy=policy)
    by_uid = dict(zip(uids, values, strict=True))
    return [by_uid.get(uid_of[miner], 0.0) for miner in MINERS]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=48, help="world rounds per validator")
    parser.add_argument("--size", type=int, default=3000, help="base catalog size")
    parser.add_argument("--seed", type=int, default=7, help="synthetic catalog seed")
    parser.add_argument("--work", type=Path, default=Path("/tmp/arena-bench-agreement"))
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    started = time.perf_counter()
    checkpoints = args.work / f"episodes-{args.size}-{args.seed}"
    checkpoints.mkdir(parents=True, exist_ok=True)
    with open_index(base_index(args.size, args.seed, args.work)) as base:
        for k in range(args.rounds):
            for validator in VALIDATORS:
                path = checkpoints / f"{validator}-r{k}.jsonl"
                if not path.is_file():
                    records = asyncio.run(run_round(base, validator, k))
                    temporary = path.with_suffix(".tmp")
                    temporary.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
                    temporary.replace(path)
                print(f"round {k} {validator} done", flush=True)
    result = summarize(checkpoints, args.rounds)
    records = result.pop("records")
    seconds = round(time.perf_counter() - started, 1)
    result.update(
        {"size": args.size, "catalog_seed": args.seed, "machine": platform.machine(), "cpus": os.cpu_count(),
         "seconds_this_run": seconds, "load_avg_1m": round(os.getloadavg()[0], 2), "records": RECORDS}
    )  # fmt: skip
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    (args.out.parent / RECORDS).write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))


def summarize(checkpoints: Path, rounds: int) -> dict[str, Any]:
    """The figures of the module docstring from the checkpointed records."""
    records = {
        v: [json.loads(line) for k in range(rounds) for line in (checkpoints / f"{v}-r{k}.jsonl").open()]
        for v in VALIDATORS
    }
    policy = ScorePolicy()
    everything = records[VALIDATORS[0]] + records[VALIDATORS[1]]
    truth = [float(np.mean([r["score"] for r in everything if r["miner"] == m])) for m in MINERS]
    curve = []
    for k in range(1, rounds + 1):
        a = weights([r for r in records[VALIDATORS[0]] if r["round"] < k], policy)
        b = weights([r for r in records[VALIDATORS[1]] if r["round"] < k], policy)
        curve.append({"rounds": k, "spearman": spearman(a, b), "a_vs_truth": spearman(a, truth),
                      "b_vs_truth": spearman(b, truth), "weights_a": a, "weights_b": b})  # fmt: skip
    draws = random.Random(0)
    baseline = [spearman([draws.random() for _ in MINERS], truth) or 0.0 for _ in range(1000)]
    worlds = {v: sorted({r["world_id"] for r in records[v]}) for v in VALIDATORS}
    shared = set(worlds[VALIDATORS[0]]) & set(worlds[VALIDATORS[1]])
    return {
        "miners": list(MINERS),
        "rounds": rounds,
        "episodes_per_validator": len(records[VALIDATORS[0]]),
        "worlds_shared": len(shared),
        "mean_score": dict(zip(MINERS, [round(t, 4) for t in truth], strict=True)),
        "spearman_final": curve[-1]["spearman"],
        "baseline_same_world": 1.0,
        "baseline_random_abs_rho_vs_truth": round(float(np.mean(np.abs(baseline))), 4),
        "curve": curve,
        "records": _rows(everything),
    }


def _rows(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (validator, round, miner): the world and the miner's scores in the world's task order."""
    rows: dict[tuple[str, int, str], dict[str, Any]] = {}
    for r in records:
        key = (r["validator"], r["round"], r["miner"])
        row = rows.setdefault(key, {"validator": key[0], "round": key[1], "miner": key[2],
                                    "world_id": r["world_id"], "scores": []})  # fmt: skip
        row["scores"].append(r["score"])
    return list(rows.values())


if __name__ == "__main__":
    main()
