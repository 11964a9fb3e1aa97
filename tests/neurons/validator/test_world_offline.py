"""A world round's stored episodes judged again offline, from the pack alone, give the validator's Judgment.

``arena judge --world`` (with the stored tool log, and with a replay of the calls), the library
path (``judging.world.world_lookup`` over the validator's world cache) and the converter all
judge a world episode as the round did: at its answer's world version, with its task's shopper.
"""

from __future__ import annotations

import asyncio
import functools
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena.index import SearchIndex
from arena.tools import ToolContext
from arena.world.compile import compile_world
from arena.world.pack import save_pack
from arena.world.seed import WorldRound
from curation.conversion.convert import Converter, convert_judged
from curation.conversion.results import Converted, Dropped
from judging.judge import JudgeConfig, judge
from judging.world import WorldJudging, world_lookup
from neurons.cli import app
from neurons.miner.agents.scripted import scripted_agent
from neurons.validator.rounds import run_round
from neurons.validator.worlds import RoundWorld
from storage.records import JudgedTrace
from tests.neurons.conftest import LocalNet
from tests.neurons.rig import all_traces, make_sessions, running_rig

TOOLSET = "arena-3"
runner = CliRunner()


@pytest.fixture
def round_traces(net: LocalNet, world_base: SearchIndex, tmp_path: Path) -> tuple[Path, list[JudgedTrace]]:
    """One world round of two scripted miners on arena-3, its pack saved as the validator's cache keeps it."""
    pack = compile_world(b"offline-world", world_base)
    cache = tmp_path / "worlds"
    save_pack(pack, cache / "offline")
    judging = WorldJudging.over(pack, world_base)
    world = RoundWorld(
        WorldRound(index=0, start_block=0, seed_block=0),
        "0x" + "cd" * 32,
        judging,
        ToolContext(judging.overlay, TOOLSET),
        "compiled",
    )
    sessions = make_sessions(tmp_path)
    config = JudgeConfig(catalog_version=world_base.catalog_version, toolset=TOOLSET)

    async def play() -> None:
        # Two harnesses that differ (identical work would be credited once: a round's decision).
        agents = {"miner1": scripted_agent, "miner2": functools.partial(scripted_agent, view_top=3)}
        async with running_rig(
            net, world_base, sessions, agents=agents, judge_config=config, tasks_per_round=6
        ) as rig:
            summary = await run_round(rig.deps, rig.config, await rig.snapshot(), round_id=0, world=world)
        assert summary.result == "ok"

    asyncio.run(play())
    traces = [t for t in all_traces(sessions) if t.trajectory is not None and t.judgment.end == "completed"]
    assert traces and all(t.episode.pack_hash == pack.manifest.pack_hash for t in traces)
    assert any(e.tool == "ask_user" for t in traces for e in t.tool_log), "the scripted agent asks"
    return cache, traces


def _verdict(judgment_json: dict[str, object]) -> tuple[object, ...]:
    return (
        judgment_json["score"],
        judgment_json["success"],
        judgment_json["outcome"],
        judgment_json["checks"],
    )


def test_the_library_and_the_cli_judge_a_world_episode_offline_as_the_round_did(
    world_base: SearchIndex,
    world_base_dir: Path,
    round_traces: tuple[Path, list[JudgedTrace]],
    tmp_path: Path,
) -> None:
    cache, traces = round_traces
    lookup = world_lookup(cache, world_base)
    config = JudgeConfig(catalog_version=world_base.catalog_version, toolset=TOOLSET)
    for n, trace in enumerate(traces):
        assert trace.trajectory is not None and trace.episode.pack_hash is not None
        world = lookup(trace.episode.pack_hash)
        assert world is not None
        at = world.against(trace.task, trace.tool_log, TOOLSET)
        again = asyncio.run(
            judge(
                trace.task,
                trace.trajectory,
                log=trace.tool_log,
                against=at,
                completer=None,
                config=config,
            )
        )
        stored = trace.judgment.model_dump(mode="json")
        assert _verdict(again.model_dump(mode="json")) == _verdict(stored)
        trajectory, log = tmp_path / f"t{n}.json", tmp_path / f"log{n}.json"
        trajectory.write_text(trace.trajectory.model_dump_json(), encoding="utf-8")
        log.write_text(json.dumps([e.model_dump(mode="json") for e in trace.tool_log]), encoding="utf-8")
        base = ["judge", "--index", str(world_base_dir), "--world", str(cache / "offline"), "--full"]
        base += ["--trajectory", str(trajectory), "--toolset", TOOLSET]
        for extra in (["--tool-log", str(log)], []):  # the stored log, then a replay on the pack
            result = runner.invoke(app, [*base, *extra])
            assert result.exit_code == 0, result.output
            assert _verdict(json.loads(result.stdout)) == _verdict(stored), (n, extra)


def test_the_converter_finds_each_episodes_world_in_the_cache_and_converts_its_questions(
    world_base: SearchIndex, round_traces: tuple[Path, list[JudgedTrace]]
) -> None:
    cache, traces = round_traces
    converter = Converter(index=world_base, worlds=world_lookup(cache, world_base))
    results = [asyncio.run(convert_judged(t, converter)) for t in traces]
    assert not [r for r in results if isinstance(r, Dropped) and r.reason == "unknown_world"]
    converted = [r for r in results if isinstance(r, Converted)]
    assert any(e.tool == "ask_user" for r in converted for e in r.tool_log), [
        r.reason for r in results if isinstance(r, Dropped)
    ]
    for result in converted:  # re-judged as the validator judged its source
        assert result.judgment.check("shopper") is not None
    blind = Converter(index=world_base, worlds=world_lookup(cache / "elsewhere", world_base))
    assert all(
        isinstance(r, Dropped) and r.reason == "unknown_world"
        for r in (asyncio.run(convert_judged(t, blind)) for t in traces)
    )
