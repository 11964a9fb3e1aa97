"""World rounds: the seed from the chain, the pack compiled once and cached, two validators in agreement."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from arena.index import SearchIndex
from arena.tools import ToolContext
from arena.world.commitment import parse_commitment
from arena.world.compile import compile_world
from arena.world.pack import TASKS
from arena.world.seed import WorldRound, round_seed
from judging.judge import JudgeConfig
from judging.types import ShopperEvidence
from judging.world import WorldJudging, world_lookup
from neurons.chain.chaintypes import ChainCommitment, Submission
from neurons.miner.agents.contract import AgentOutput, AgentRequest, ToolCaller
from neurons.miner.agents.scripted import scripted_agent
from neurons.validator.rounds import run_round
from neurons.validator.settings import WorldConfig
from neurons.validator.worlds import (
    RoundWorld,
    WorldKeys,
    WorldSkip,
    load_or_compile,
    pack_directory,
    round_world,
)
from tests.neurons.conftest import NETUID, LocalNet
from tests.neurons.rig import all_traces, make_sessions, running_rig

HASH = "0x" + "ab" * 32
SECRET = bytes(range(32))
KEYS = WorldKeys(secrets=b"s" * 32, seal=b"c" * 32)


class Chain:
    """A chain that has made blocks up to ``head`` (each hash fixed by its number), with commitments.

    Our commitment is kept per block, as an archive node answers a read at an old block.
    """

    def __init__(self, head: int, hotkey: str = "5Validator") -> None:
        self.head, self.hotkey, self.reads = head, hotkey, 0
        self.posted: list[tuple[int, str]] = []  # (block, text) of each commitment we sent

    async def block_hash(self, block: int) -> str | None:
        self.reads += 1
        return None if block > self.head else "0x" + f"{block:064x}"

    async def commitment(self, hotkey: str, *, block: int | None = None) -> ChainCommitment | None:
        at = self.head if block is None else block
        kept = [(b, text) for b, text in self.posted if b <= at and hotkey == self.hotkey]
        return (
            ChainCommitment(hotkey=hotkey, text=kept[-1][1], block=kept[-1][0], read_at=at) if kept else None
        )

    async def set_commitment(self, text: str) -> Submission:
        self.posted.append((self.head, text))
        return Submission(success=True, message="Success", block=self.head)


def test_a_pack_is_compiled_once_then_loaded_and_a_corrupt_cache_compiled_again(
    world_base: SearchIndex, tmp_path: Path
) -> None:
    seed = round_seed(HASH, netuid=NETUID, round_index=0, secret=SECRET)
    directory = pack_directory(tmp_path, "5Validator", 0)
    assert directory == tmp_path / "5Validator-r0"  # kept per (validator, round)
    first, source = load_or_compile(world_base, seed, directory, seal_key=KEYS.seal)
    assert source == "compiled" and first.tasks
    assert (directory / "manifest.json").is_file() and (directory / "seal").is_file()
    again, source = load_or_compile(world_base, seed, directory, seal_key=KEYS.seal)
    assert source == "cached" and again == first
    (directory / TASKS).write_bytes(b"{}\n")  # tampered: refused, compiled again over it
    repaired, source = load_or_compile(world_base, seed, directory, seal_key=KEYS.seal)
    assert source == "compiled" and repaired == first
    # Another validator's seal key does not vouch for our pack: compiled again, under its seal.
    other, source = load_or_compile(world_base, seed, directory, seal_key=b"x" * 32)
    assert source == "compiled" and other == first
    # The export's converter finds the world of a stored episode by its pack hash.
    lookup = world_lookup(tmp_path, world_base)
    found = lookup(first.manifest.pack_hash)
    assert found is not None and found.pack == first and lookup(first.manifest.pack_hash) is found
    assert lookup("0" * 64) is None


async def test_the_world_follows_the_chain_and_our_commitment_and_is_kept_within_its_round(
    world_base: SearchIndex, tmp_path: Path
) -> None:
    config = WorldConfig(enabled=True, period_blocks=10, delay_blocks=3)

    async def world(chain: Chain, block: int, current: Any = None) -> Any:
        return await round_world(
            chain,
            world_base,
            config,
            netuid=NETUID,
            block=block,
            toolset="sb-1",
            cache=tmp_path,
            keys=KEYS,
            current=current,
        )

    assert await world(Chain(2), 2) == WorldSkip("unseeded")  # before the first seed block: no guess
    assert (await world(Chain(2), 9)).reason == "unseeded"  # the node's final head lags behind
    chain = Chain(12)
    # No secret of ours on chain before world 0's seed block: the anchor goes out, world 0 is skipped.
    skipped = await world(chain, 12)
    assert isinstance(skipped, WorldSkip) and skipped.reason == "uncommitted"
    assert [(b, t.split()[:2]) for b, t in chain.posted] == [(12, ["sa1", "0"])]
    assert await world(chain, 12) == skipped and len(chain.posted) == 1  # not sent twice
    chain.head = 14  # world 1 is seeded by block 13; the anchor was on chain at block 12
    first = await world(chain, 14)
    assert isinstance(first, RoundWorld) and (first.at.index, first.at.seed_block) == (1, 13)
    assert first.block_hash == "0x" + f"{13:064x}" and first.context.index is first.overlay
    assert len(chain.posted) == 1  # nothing to reveal yet: world 1 is the chain's first
    reads = chain.reads
    assert await world(chain, 15, first) is first and chain.reads == reads  # same round: not read again
    chain.head = 24
    second = await world(chain, 24, first)
    assert isinstance(second, RoundWorld) and second.at.index == 2 and second.pack_hash != first.pack_hash
    record = parse_commitment(chain.posted[-1][1])  # entering world 2 revealed world 1's secret
    assert record is not None and record.revealed_round == 1 and record.reveal_holds()
    # The secret revealed is the one world 1 ran on: anyone recompiles its pack from public data.
    secret = record.secret(1)
    assert secret is not None
    seed = round_seed(first.block_hash, netuid=NETUID, round_index=1, secret=secret)
    assert compile_world(seed, world_base).manifest.pack_hash == first.pack_hash
    # A validator whose anchor landed after a world's seed block does not serve that world.
    late = Chain(24)
    assert (await world(late, 24)).reason == "uncommitted"
    late.posted = [(23, late.posted[0][1])]  # as if it landed at block 23, after world 2's seed block
    assert (await world(late, 24)).reason == "uncommitted"
    late.head = 34
    assert isinstance(await world(late, 34), RoundWorld)


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
