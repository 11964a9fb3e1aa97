"""World episodes convert on their world: replayed and re-judged over its overlay, exported with its id."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from sqlalchemy.orm import Session

from arena.index import SearchIndex
from arena.tools import canonical_arguments
from arena.types import FunctionCall, Message, ToolCall, ToolLogEntry, result_hash
from arena.world.compile import compile_world
from arena.world.overlay import WorldOverlay
from arena.world.types import WorldPack
from curation.config import CurationConfig
from curation.conversion.convert import Converter, convert_judged
from curation.conversion.results import Converted, Dropped
from curation.export import curate_and_export
from curation.formats import WORLD_COLUMNS
from curation.stages.convert import FIXES
from judging.world import WorldJudging
from storage import repository
from storage.records import JudgedTrace
from storage.tasks import save_tasks
from tests.curation.conversion.world import world_traces


@pytest.fixture(scope="module")
def pack(world_base: SearchIndex) -> WorldPack:
    return compile_world("convert-world", world_base)


@pytest.fixture(scope="module")
def world(world_base: SearchIndex, pack: WorldPack) -> WorldJudging:
    return WorldJudging.over(pack, world_base)


@pytest.fixture(scope="module")
def overlay(world: WorldJudging) -> WorldOverlay:
    return world.overlay


@pytest.fixture(scope="module")
def traces(world: WorldJudging) -> list[JudgedTrace]:
    return world_traces(world)


def _converter(base: SearchIndex, world: WorldJudging) -> Converter:
    return Converter(index=base, worlds={world.pack_hash: world}.get)


def _asked(trace: JudgedTrace) -> JudgedTrace:
    """The trace with an ``ask_user`` turn before its answer, logged as the shopper tool would log it."""
    assert trace.trajectory is not None
    messages = list(trace.trajectory.messages)
    answer = max(i for i, m in enumerate(messages) if m.tool_calls)
    call_id = "call_ask"
    arguments = {"question": "What is your budget?"}
    at = trace.tool_log[-1].started_at + timedelta(milliseconds=1)
    question = ToolLogEntry(
        episode_id=trace.episode.episode_id,
        seq=len(trace.tool_log),
        call_id=call_id,
        tool="ask_user",
        arguments=canonical_arguments("ask_user", arguments),
        result="No preference.",
        result_hash=result_hash("No preference."),
        status="ok",
        started_at=at,
        finished_at=at,
    )
    turn = Message(
        role="assistant",
        tool_calls=(
            ToolCall(id=call_id, function=FunctionCall(name="ask_user", arguments=json.dumps(arguments))),
        ),
    )
    reply = Message(role="tool", tool_call_id=call_id, content="No preference.")
    messages[answer:answer] = [turn, reply]
    trajectory = trace.trajectory.model_copy(update={"messages": tuple(messages)})
    return trace.model_copy(update={"trajectory": trajectory, "tool_log": (*trace.tool_log, question)})


def test_world_traces_convert_on_their_world_and_an_unknown_world_is_a_typed_drop(
    world_base: SearchIndex, world: WorldJudging, traces: list[JudgedTrace]
) -> None:
    converter = _converter(world_base, world)
    results = [asyncio.run(convert_judged(t, converter)) for t in traces]
    converted = [r for r in results if isinstance(r, Converted)]
    assert converted, [r for r in results if isinstance(r, Dropped)]
    for trace, result in zip(traces, results, strict=True):
        if isinstance(result, Converted):  # the logged results are the world's, replayed byte for byte
            assert {e.result for e in result.tool_log} <= {e.result for e in trace.tool_log}
            assert result.judgment.success == trace.judgment.success
    blind = Converter(index=world_base)
    assert asyncio.run(convert_judged(traces[0], blind)).reason == "unknown_world"  # type: ignore[union-attr]


def test_a_world_trace_with_a_shopper_question_converts_or_drops_but_never_raises(
    world_base: SearchIndex, world: WorldJudging, traces: list[JudgedTrace]
) -> None:
    converter = _converter(world_base, world)
    for trace in traces:
        result = asyncio.run(convert_judged(_asked(trace), converter))
        assert isinstance(result, Converted | Dropped)
        if isinstance(result, Converted):
            assert any(e.tool == "ask_user" for e in result.tool_log) or result.pruned


def test_exports_name_the_world_of_each_row(
    session: Session,
    tmp_path: Path,
    world_base: SearchIndex,
    pack: WorldPack,
    world: WorldJudging,
    traces: list[JudgedTrace],
) -> None:
    save_tasks(session, tasks=[t.task for t in traces])
    for t in traces:
        repository.save_judged(
            session, episode=t.episode, trajectory=t.trajectory, tool_log=t.tool_log, judgment=t.judgment
        )
    out = tmp_path / "export"
    config = CurationConfig(split_by="none")
    curate_and_export(session, out, config=config, converter=_converter(world_base, world))
    named = {"world_id": pack.manifest.world_id, "pack_hash": pack.manifest.pack_hash}
    for name in ("sft", "kto", "grpo"):
        rows = [json.loads(line) for line in (out / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()]
        assert rows and all({c: r[c] for c in WORLD_COLUMNS} == named for r in rows), name
        table = pq.read_table(out / f"{name}.parquet")
        assert set(WORLD_COLUMNS) <= set(table.column_names)
        assert set(table.column("world_id").to_pylist()) == {named["world_id"]}
    assert pack.manifest.world_id in (out / "README.md").read_text(encoding="utf-8")


def test_world_traces_without_their_packs_are_counted_with_the_fix(
    session: Session, tmp_path: Path, world_base: SearchIndex, traces: list[JudgedTrace]
) -> None:
    save_tasks(session, tasks=[t.task for t in traces])
    for t in traces:
        repository.save_judged(
            session, episode=t.episode, trajectory=t.trajectory, tool_log=t.tool_log, judgment=t.judgment
        )
    blind = Converter(index=world_base)  # an index, but no world packs
    funnel = curate_and_export(
        session, tmp_path / "export", config=CurationConfig(split_by="none"), converter=blind
    )
    convert = funnel["stages"]["convert"]
    assert convert["dropped"]["unknown_world"] > 0
    assert convert["notes"]["fix"] == {"unknown_world": FIXES["unknown_world"]}
    assert "off" not in convert["notes"]
