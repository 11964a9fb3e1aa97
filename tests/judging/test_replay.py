from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.index import SearchIndex, build_index, open_index
from arena.tools import ToolContext, canonical_arguments, run_tool
from arena.types import FunctionCall, Message, ToolCall, Trajectory, result_hash
from judging.context import JudgingContext
from judging.grounding import check_grounding
from judging.replay import replay_log
from judging.types import GroundingEvidence
from tests.judging.factory import product_task

TASK = product_task()


@pytest.fixture(scope="module")
def index(fixture_catalog_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SearchIndex]:
    directory = tmp_path_factory.mktemp("replay-index")
    build_index([fixture_catalog_path], directory)
    opened = open_index(directory)
    yield opened
    opened.close()


def played(index: SearchIndex, calls: list[tuple[str, str]]) -> Trajectory:
    """A trajectory whose tool messages carry exactly what the real tools return."""
    ctx = ToolContext(index=index)
    messages = [Message(role="user", content="nike running shoes")]
    for n, (name, arguments) in enumerate(calls):
        call = ToolCall(id=f"c{n}", function=FunctionCall(name=name, arguments=arguments))
        messages.append(Message(role="assistant", content="step", tool_calls=(call,)))
        messages.append(
            Message(role="tool", tool_call_id=call.id, content=run_tool(name, arguments, ctx).content)
        )
    return Trajectory(task_id="t", episode_id="e", miner_hotkey="hk", messages=tuple(messages))


CALLS = [
    ("find_product", json.dumps({"q": " nike running ", "page": 1})),
    ("view_product_information", json.dumps({"product_ids": "1001, 1002"})),
    ("find_product", "{not json"),
    ("recommend_product", json.dumps({"product_ids": "1001"})),
    ("terminate", json.dumps({"status": "success"})),
]


def test_replay_logs_every_call_as_the_tool_server_would(index: SearchIndex) -> None:
    traj = played(index, CALLS)
    log = replay_log(traj, ToolContext(index=index))
    assert [e.seq for e in log] == [0, 1, 2, 3, 4]
    assert [e.call_id for e in log] == [c.id for c in traj.tool_calls()]
    assert [e.tool for e in log] == [name for name, _ in CALLS]
    assert [e.status for e in log] == ["ok", "ok", "error", "ok", "ok"]
    assert log[0].arguments == canonical_arguments("find_product", CALLS[0][1])
    assert all(e.result_hash == result_hash(e.result) for e in log)
    assert all(e.episode_id == "e" for e in log)


def test_replayed_log_grounds_an_honest_trajectory_and_catches_a_forged_one(index: SearchIndex) -> None:
    traj = played(index, CALLS)
    log = replay_log(traj, ToolContext(index=index))
    clean = check_grounding(JudgingContext(task=TASK, trajectory=traj, log=log, products=index.products))
    evidence = clean.evidence_as(GroundingEvidence)
    assert evidence.fabricated_call_ids == () and evidence.hidden_calls == () and clean.value == 1.0
    messages = list(traj.messages)
    messages[2] = Message(
        role="tool", tool_call_id="c0", content=json.dumps([{"product_id": "1001", "price": 1}])
    )
    forged = traj.model_copy(update={"messages": tuple(messages)})
    log = replay_log(forged, ToolContext(index=index))
    result = check_grounding(JudgingContext(task=TASK, trajectory=forged, log=log, products=index.products))
    assert result.evidence_as(GroundingEvidence).fabricated_call_ids == ("c0",)
