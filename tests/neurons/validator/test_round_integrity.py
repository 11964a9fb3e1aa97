"""Round integrity probes: no miner can learn an answer before it is served (issue 27, items 1, 9, 11).

Each attack runs a real round through the validator's round code (the tool server and the
miner on loopback, the local chain through the SDK client) next to the same round played by a
guesser; the attacker falls back to the guesser's exact episode when its attack finds nothing, so
equal per-task scores mean the attack added nothing.
"""

from __future__ import annotations

from pathlib import Path

from arena.index import SearchIndex
from arena.tools import ToolContext
from arena.types import Task
from arena.world.compile import compile_world
from arena.world.pack import load_pack, make_pack, save_pack
from arena.world.seed import WorldRound, round_seed
from arena.world.types import WorldPack
from judging.judge import JudgeConfig
from judging.world import WorldJudging
from neurons.miner.agents.contract import Agent
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
from tests.neurons.rig import all_traces, make_sessions, running_rig, stock_tasks
from tests.neurons.validator.integrity_agents import TaskIdInverter, WorldOracle, guesser

BLOCK = 12.0  # the local net's block time
KEYS = WorldKeys(secrets=b"s" * 32, seal=b"c" * 32)


async def _scores(
    net: LocalNet,
    index: SearchIndex,
    directory: Path,
    agent: Agent,
    *,
    world: RoundWorld | None = None,
    tasks: int = 8,
    toolset: str = "sb-1",
) -> dict[str, tuple[float, bool]]:
    """Play one round with ``agent`` as the only miner (a fresh database); each task's (score, success)."""
    sessions = make_sessions(directory)
    if world is None:
        stock_tasks(sessions, index, n=tasks)
    config = JudgeConfig(catalog_version=index.catalog_version, toolset=toolset)
    async with running_rig(
        net,
        index,
        sessions,
        agents={"miner1": agent},
        judge_config=config,
        tasks_per_round=tasks,
        episode_seconds=60.0,
    ) as rig:
        summary = await run_round(rig.deps, rig.config, await rig.snapshot(), round_id=0, world=world)
    assert summary.result == "ok" and summary.stored == tasks, summary
    return {t.task.task_id: (t.judgment.score, t.judgment.success) for t in all_traces(sessions)}


async def test_a_miner_compiling_the_world_from_public_data_scores_no_better_than_a_guesser(
    net: LocalNet, world_base: SearchIndex, tmp_path: Path
) -> None:
    config = WorldConfig(enabled=True, period_blocks=10, delay_blocks=3)
    chain = net.chain("validator")

    async def world() -> RoundWorld | WorldSkip:
        return await round_world(
            chain,
            world_base,
            config,
            netuid=NETUID,
            block=await chain.block(),
            toolset="sb-1",
            cache=tmp_path / "worlds",
            keys=KEYS,
        )

    net.clock.advance(BLOCK * 5)  # block 6: world round 0 is seeded by block 3
    assert await world() == WorldSkip("uncommitted", WorldRound(0, 0, 3))  # our secret goes on chain now
    net.clock.advance(BLOCK * 10)  # block 16: world round 1, seeded by block 13, after the commitment
    served = await world()
    assert isinstance(served, RoundWorld) and served.at.index == 1
    oracle = WorldOracle(net.chain("miner1"), world_base, NETUID, config.period_blocks, config.delay_blocks)
    attacked = await _scores(net, world_base, tmp_path / "oracle", oracle, world=served)
    guessed = await _scores(net, world_base, tmp_path / "guesser", guesser, world=served)
    assert oracle.knew and not any(oracle.knew)  # its world never held a served task
    assert attacked == guessed  # so it scored exactly as the guess it fell back to, task by task


async def test_a_miner_inverting_the_task_id_gains_nothing_on_static_rounds(
    net: LocalNet, world_base: SearchIndex, tmp_path: Path
) -> None:
    inverter = TaskIdInverter(world_base)
    attacked = await _scores(net, world_base, tmp_path / "inverter", inverter, tasks=9)
    guessed = await _scores(net, world_base, tmp_path / "guesser", guesser, tasks=9)
    assert len(inverter.knew) == 9 and not any(inverter.knew)  # no id named its gold
    assert attacked == guessed


# The scripted reference miner's (score, success) per task of world "integrity-honest" over the
# test base, as main scored it before round secrets: the integrity work changes no honest score.
HONEST: dict[str, tuple[float, bool]] = {
    "t-2f90e18fcc3af8fcd668aa335a17d2b4": (1.0, True),
    "t-43dbb8db4891273cb9523f76bb2b5858": (1.0, True),
    "t-453ee8a6748a0786c24717ab6ac9faa9": (0.3, False),
    "t-61e0627c9120eed5fb123871654ab7f8": (0.2, False),
    "t-c0f9147255a6beb252d1833653401ab7": (1.0, True),
    "t-c7d9a8cb93046c71a840a7f3da77de42": (1.0, True),
    "t-f06ebbe37684b1c7f7dd48e035b84ab9": (1.0, True),
    "t-fc2e84b7c9422963f1d2632a54655fcf": (1.0, True),
}


async def test_an_honest_scripted_miner_scores_as_before(
    net: LocalNet, world_base: SearchIndex, tmp_path: Path
) -> None:
    pack = compile_world(b"integrity-honest", world_base)
    judging = WorldJudging.over(pack, world_base)
    at = WorldRound(index=0, start_block=0, seed_block=0)
    world = RoundWorld(at, "0x" + "cd" * 32, judging, ToolContext(judging.overlay, "arena-3"), "compiled")
    scores = await _scores(net, world_base, tmp_path, scripted_agent, world=world, toolset="arena-3")
    assert scores == HONEST, scores


def _forged(pack: WorldPack) -> WorldPack:
    """The pack with its first task's request rewritten: every hash recomputed, self-consistent."""
    first = pack.tasks[0]
    forged_task = Task.model_validate({**first.task.model_dump(), "task_id": "", "query": "a forged request"})
    tasks = (first.model_copy(update={"task": forged_task}), *pack.tasks[1:])
    m = pack.manifest
    return make_pack(
        seed_hex=m.seed_hex,
        base_hash=m.base_hash,
        catalog_version=m.catalog_version,
        spec=m.spec,
        delta=pack.delta,
        vouchers=pack.vouchers,
        tasks=tasks,
    )


def test_a_forged_self_consistent_pack_in_the_cache_is_compiled_over(
    world_base: SearchIndex, tmp_path: Path
) -> None:
    seed = round_seed("0x" + "ab" * 32, netuid=NETUID, round_index=0, secret=bytes(32))
    directory = pack_directory(tmp_path, "5Validator", 0)
    genuine, source = load_or_compile(world_base, seed, directory, seal_key=KEYS.seal)
    assert source == "compiled"
    forged = _forged(genuine)
    save_pack(forged, tmp_path / "forged")
    for part in (tmp_path / "forged").iterdir():  # the forger leaves our seal where it was
        (directory / part.name).write_bytes(part.read_bytes())
    assert load_pack(directory) == forged  # every hash checks out: only the validator can tell
    loaded, source = load_or_compile(world_base, seed, directory, seal_key=KEYS.seal)
    assert source == "compiled" and loaded == genuine
