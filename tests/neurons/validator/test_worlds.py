"""World rounds: the seed from the chain, the pack compiled once and cached, two validators in agreement."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import select

from arena.index import SearchIndex
from arena.tools import ToolContext
from arena.world.compile import compile_world
from arena.world.pack import TASKS
from arena.world.seed import WorldRound, base_hash, round_seed
from judging.judge import JudgeConfig
from judging.types import ShopperEvidence
from judging.world import WorldJudging, world_lookup
from neurons.chain.wallets import register_wallet
from neurons.miner.agents.contract import AgentOutput, AgentRequest, ToolCaller
from neurons.miner.agents.scripted import scripted_agent
from neurons.validator.process import serve
from neurons.validator.rounds import run_round
from neurons.validator.settings import ValidatorSettings, WorldConfig
from neurons.validator.worlds import RoundWorld, load_or_compile, pack_directory, round_world
from storage import repository
from storage.db import make_engine, make_sessionmaker
from storage.models import EpisodeRow, JudgmentRow
from tests.neurons.conftest import NETUID, LocalNet
from tests.neurons.rig import (
    all_traces,
    failing_agent,
    make_sessions,
    running_rig,
    serve_miners,
    wait_for_block,
    world_validator,
)

HASH = "0x" + "ab" * 32


class Hashes:
    """A chain that has produced blocks up to ``head`` (each hash fixed by its number)."""

    def __init__(self, head: int) -> None:
        self.head, self.reads = head, 0

    async def block_hash(self, block: int) -> str | None:
        self.reads += 1
        return None if block > self.head else "0x" + f"{block:064x}"


def test_a_pack_is_compiled_once_then_loaded_and_a_corrupt_cache_compiled_again(
    world_base: SearchIndex, tmp_path: Path
) -> None:
    seed = round_seed(HASH, netuid=NETUID, round_index=0)
    first, source = load_or_compile(world_base, seed, tmp_path)
    assert source == "compiled" and first.tasks
    directory = pack_directory(tmp_path, seed, base_hash(world_base))
    assert (directory / "manifest.json").is_file()
    again, source = load_or_compile(world_base, seed, tmp_path)
    assert source == "cached" and again == first
    (directory / TASKS).write_bytes(b"{}\n")  # tampered: refused, compiled again over it
    repaired, source = load_or_compile(world_base, seed, tmp_path)
    assert source == "compiled" and repaired == first
    # The export's converter finds the world of a stored episode by its pack hash.
    lookup = world_lookup(tmp_path, world_base)
    found = lookup(first.manifest.pack_hash)
    assert found is not None and found.pack == first and lookup(first.manifest.pack_hash) is found
    assert lookup("0" * 64) is None


async def test_the_world_follows_the_chain_and_is_kept_within_its_round(
    world_base: SearchIndex, tmp_path: Path
) -> None:
    config = WorldConfig(enabled=True, period_blocks=10, delay_blocks=3)

    async def world(chain: Hashes, block: int, current: Any = None) -> Any:
        return await round_world(
            chain,
            world_base,
            config,
            netuid=NETUID,
            block=block,
            toolset="sb-1",
            cache=tmp_path,
            current=current,
        )

    assert await world(Hashes(2), 2) is None  # before the first seed block: no world, no guess
    assert await world(Hashes(2), 9) is None  # the node lags behind the block we were told
    chain = Hashes(12)
    first = await world(chain, 12)
    assert first is not None and (first.at.index, first.at.seed_block) == (0, 3)
    assert first.block_hash == "0x" + f"{3:064x}" and first.context.index is first.overlay
    reads = chain.reads
    assert await world(chain, 12, first) is first and chain.reads == reads  # same round: not read again
    chain.head = 14
    second = await world(chain, 13, first)
    assert second is not None and second.at.index == 1 and second.pack_hash != first.pack_hash


def _stored(settings: ValidatorSettings) -> dict[str, Any]:
    """Round 0's world and tasks, and each (task, miner)'s outcome, from one validator's database."""
    engine = make_engine(settings.database_url())
    try:
        with make_sessionmaker(engine)() as session:
            record = repository.get_round(session, round_id=0)
            assert record is not None and record.stats is not None
            episodes = {row.episode_id: row for row in session.scalars(select(EpisodeRow))}
            outcomes = {
                (row.task_id, row.miner_hotkey): (
                    row.success,
                    row.score,
                    row.end_reason,
                    row.outcome,
                    [(c["name"], c["value"]) for c in row.checks],
                    row.world_id,
                    row.pack_hash,
                    episodes[row.episode_id].world_id,
                )
                for row in session.scalars(select(JudgmentRow))
            }
            return {"world": record.stats["world"], "tasks": record.task_ids, "outcomes": outcomes}
    finally:
        engine.dispose()


async def test_two_validators_serve_the_same_world_tasks_and_outcomes(
    make_net: Callable[..., LocalNet], world_base_dir: Path, tmp_path: Path
) -> None:
    net = make_net(block_seconds=0.25)  # the seed block (2) is made half a second after genesis
    register_wallet(net.path, net.wallets["stranger"], stake=1000.0, validator_permit=True)
    first = world_validator(net, tmp_path, world_base_dir, "validator")
    second = world_validator(net, tmp_path, world_base_dir, "stranger")
    await wait_for_block(net, 2)  # the seed block
    async with AsyncExitStack() as stack:
        await serve_miners(stack, net, {"miner1": scripted_agent, "miner2": failing_agent})
        reports = await asyncio.gather(serve(first, once=True), serve(second, once=True))
    for report in reports:
        assert report is not None and report["round"]["result"] == "ok", report
    one, other = _stored(first), _stored(second)
    assert one["world"]["pack_hash"] == other["world"]["pack_hash"]  # the same world, compiled apart
    assert one["world"]["world_id"] == other["world"]["world_id"] and one["world"]["source"] == "compiled"
    assert one["world"]["seed_block"] == 2 and one["world"]["block_hash"] == other["world"]["block_hash"]
    assert len(one["tasks"]) == 3 and one["tasks"] == other["tasks"]  # identical tasks, in order
    assert len(one["outcomes"]) == 6 and one["outcomes"] == other["outcomes"]  # identical outcomes per miner
    ends = {value[2] for value in one["outcomes"].values()}
    assert ends == {"completed", "miner_error"}
    assert {value[5] for value in one["outcomes"].values()} == {one["world"]["world_id"]}
    assert {value[7] for value in one["outcomes"].values()} == {one["world"]["world_id"]}
    # The pack each compiled is cached by its seed; a restart would load it, not compile it again.
    assert list(first.world_cache_path().iterdir()) and list(second.world_cache_path().iterdir())


def test_world_rounds_are_off_by_default_and_the_delay_stays_inside_the_period() -> None:
    assert WorldConfig().enabled is False
    with pytest.raises(ValueError, match="delay_blocks"):
        WorldConfig(period_blocks=5, delay_blocks=5)


async def _asks_then_breaks(request: AgentRequest, call_tool: ToolCaller) -> AgentOutput:
    """An agent that asks the shopper, then fails (its miner answers 500: no trajectory to judge)."""
    await call_tool("ask_user", {"question": "Do you need free shipping?"}, "call_ask")
    raise RuntimeError("broken after asking")


def _histogram(name: str) -> tuple[float, float]:
    """A histogram's (count, sum) so far."""
    return (
        REGISTRY.get_sample_value(f"{name}_count") or 0.0,
        REGISTRY.get_sample_value(f"{name}_sum") or 0.0,
    )


async def test_the_shopper_questions_metric_counts_the_judges_questions_not_the_tool_log(
    net: LocalNet, world_base: SearchIndex, tmp_path: Path
) -> None:
    pack = compile_world(b"metric-world", world_base)
    judging = WorldJudging.over(pack, world_base)
    at = WorldRound(index=0, start_block=0, seed_block=0)
    world = RoundWorld(at, HASH, judging, ToolContext(judging.overlay, "arena-3"), "compiled")
    sessions = make_sessions(tmp_path)
    config = JudgeConfig(catalog_version=world_base.catalog_version, toolset="arena-3")
    agents = {"miner1": scripted_agent, "miner2": _asks_then_breaks}
    before = _histogram("arena_shopper_questions_per_episode")
    async with running_rig(
        net, world_base, sessions, agents=agents, judge_config=config, tasks_per_round=4
    ) as rig:
        summary = await run_round(rig.deps, rig.config, await rig.snapshot(), round_id=0, world=world)
    assert summary.result == "ok" and summary.stored == 8
    traces = all_traces(sessions)
    logged = sum(1 for t in traces for e in t.tool_log if e.tool == "ask_user")
    judged = [
        c.evidence_as(ShopperEvidence) for t in traces if (c := t.judgment.check("shopper")) is not None
    ]
    broken = [t for t in traces if t.episode.miner_hotkey == net.hotkey("miner2")]
    assert all(
        t.judgment.end == "miner_error" and any(e.tool == "ask_user" for e in t.tool_log) for t in broken
    )
    assert len(judged) == 4 and logged > sum(j.asked for j in judged)  # the log holds unjudged questions
    count, total = _histogram("arena_shopper_questions_per_episode")
    # One observation per episode the judge counted questions in (its shopper check), of that count.
    assert (count - before[0], total - before[1]) == (len(judged), sum(j.asked for j in judged))
