from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from arena.index import build_index, open_index
from arena.tools import ToolContext, run_tool
from arena.types import FunctionCall, Message, ToolCall, Trajectory
from judging.replay import replay_log
from neurons.cli import app
from tests.judging.factory import SHOP_QUERY, shop_task

runner = CliRunner()


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("index")
    build_index([Path(__file__).resolve().parents[1] / "fixtures" / "catalog.jsonl"], directory)
    return directory


def play(
    index_dir: Path, query: str, steps: list[tuple[str, list[tuple[str, dict[str, Any]]]]]
) -> Trajectory:
    """Act as an agent: run each step's calls through the real tools and record the results verbatim."""
    index = open_index(index_dir)
    ctx = ToolContext(index=index, toolset="sb-1")
    messages = [Message(role="user", content=query)]
    n = 0
    for thought, calls in steps:
        tool_calls, results = [], []
        for name, args in calls:
            n += 1
            cid = f"c{n}"
            tool_calls.append(ToolCall(id=cid, function=FunctionCall(name=name, arguments=json.dumps(args))))
            results.append(
                Message(role="tool", tool_call_id=cid, content=run_tool(name, json.dumps(args), ctx).content)
            )
        messages.append(Message(role="assistant", reasoning_content=thought, tool_calls=tuple(tool_calls)))
        messages += results
    index.close()
    return Trajectory(
        task_id=shop_task().task_id, episode_id="e", miner_hotkey="hk", messages=tuple(messages)
    )


SHOP_STEPS = [
    ("Search the Pegasus: 'nike pegasus running'.", [("find_product", {"q": "nike pegasus running"})]),
    (
        "1001 and 1002 are both Nike in shop s1; view both.",
        [("view_product_information", {"product_ids": "1001,1002"})],
    ),
    (
        "1001 size 42 black; 1002 is 1800. Recommend 1001,1002.",
        [("recommend_product", {"product_ids": "1001,1002"})],
    ),
    ("Done.", [("terminate", {"status": "success"})]),
]


def write(tmp_path: Path, name: str, value: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def judge_cli(
    index_dir: Path, task: Path, trajectory: Path, *extra: str
) -> tuple[int, dict[str, Any] | None, str]:
    args = ["judge", "--index", str(index_dir), "--task", str(task), "--trajectory", str(trajectory), *extra]
    result = runner.invoke(app, args)
    try:
        return result.exit_code, json.loads(result.stdout), result.stderr
    except json.JSONDecodeError:
        return result.exit_code, None, result.stderr


def test_judges_a_correct_shop_trajectory_by_replay(index_dir: Path, tmp_path: Path) -> None:
    traj = play(index_dir, SHOP_QUERY, SHOP_STEPS)
    task = write(tmp_path, "task.json", shop_task().model_dump(mode="json"))
    code, out, _ = judge_cli(index_dir, task, write(tmp_path, "t.json", traj.to_wire()))
    assert code == 0 and out is not None
    assert out["success"] is True and out["score"] == 1.0 and out["rejects"] == []
    assert [c["name"] for c in out["checks"]] == [
        "outcome",
        "format",
        "grounding",
        "process",
        "axis",
        "reasoning",
    ]
    assert out["outcome"]["shop"] == 1.0 and out["outcome"]["budget"] is None
    assert out["versions"]["catalog_version"] and out["reasoning"] == {"value": None, "model": None}


def test_tool_log_file_and_fabrication(index_dir: Path, tmp_path: Path) -> None:
    traj = play(index_dir, SHOP_QUERY, SHOP_STEPS)
    index = open_index(index_dir)
    log = replay_log(traj, ToolContext(index=index, toolset="sb-1"))
    index.close()
    log_path = tmp_path / "log.jsonl"
    log_path.write_text("\n".join(e.model_dump_json() for e in log), encoding="utf-8")
    task = write(tmp_path, "task.json", shop_task().model_dump(mode="json"))
    code, out, _ = judge_cli(
        index_dir, task, write(tmp_path, "t.json", traj.to_wire()), "--tool-log", str(log_path)
    )
    assert code == 0 and out is not None and out["score"] == 1.0
    messages = list(traj.messages)
    messages[2] = Message(role="tool", tool_call_id="c1", content="[]")
    forged = traj.model_copy(update={"messages": tuple(messages)})
    code, out, _ = judge_cli(
        index_dir, task, write(tmp_path, "f.json", forged.to_wire()), "--tool-log", str(log_path)
    )
    assert code == 0 and out is not None
    assert out["fabricated_call_ids"] == ["c1"] and out["score"] == 0.0


def test_shoppingbench_row_and_task_id_mismatch(index_dir: Path, tmp_path: Path) -> None:
    row = {
        "query": SHOP_QUERY,
        "reward": [
            {"product_id": "1001", "title": ["Nike Air Zoom Pegasus Running Shoes Men"]},
            {"product_id": "1002", "title": ["Nike Revolution Running Shoes Women Lightweight"]},
        ],
    }
    traj = play(index_dir, SHOP_QUERY, SHOP_STEPS)  # names shop_task()'s id, not the row's
    code, out, err = judge_cli(
        index_dir, write(tmp_path, "row.json", row), write(tmp_path, "t.json", traj.to_wire())
    )
    assert code == 0 and out is not None and out["success"] is True
    assert out["task_id"] != shop_task().task_id
    assert out["warnings"] and "judged against" in err


def test_oro_step_list(index_dir: Path, tmp_path: Path) -> None:
    traj = play(index_dir, SHOP_QUERY, SHOP_STEPS)
    steps = []
    results = {m.tool_call_id: m.content for m in traj.messages if m.role == "tool"}
    for m in traj.messages:
        if m.role == "assistant":
            calls = [
                {
                    "name": c.function.name,
                    "parameters": json.loads(c.function.arguments),
                    "tool_call_id": c.id,
                    "result": results[c.id],
                }
                for c in m.tool_calls or ()
            ]
            steps.append({"think": m.reasoning_content, "tool_call": calls})
    task = write(tmp_path, "task.json", shop_task().model_dump(mode="json"))
    code, out, _ = judge_cli(index_dir, task, write(tmp_path, "oro.json", steps))
    assert code == 0 and out is not None and out["success"] is True and out["fabricated_call_ids"] == []


def test_full_prints_the_judgment(index_dir: Path, tmp_path: Path) -> None:
    traj = play(index_dir, SHOP_QUERY, SHOP_STEPS)
    task = write(tmp_path, "task.json", shop_task().model_dump(mode="json"))
    code, out, _ = judge_cli(index_dir, task, write(tmp_path, "t.json", traj.to_wire()), "--full")
    assert code == 0 and out is not None and out["content_hash"].startswith("j-")


@pytest.mark.parametrize("what", ["trajectory", "task", "index", "log"])
def test_unusable_input_exits_2(index_dir: Path, tmp_path: Path, what: str) -> None:
    traj = write(tmp_path, "t.json", play(index_dir, SHOP_QUERY, SHOP_STEPS).to_wire())
    task = write(tmp_path, "task.json", shop_task().model_dump(mode="json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    extra: list[str] = []
    if what == "trajectory":
        traj = write(tmp_path, "t2.json", {"messages": []})
    elif what == "task":
        task = bad
    elif what == "log":
        extra = ["--tool-log", str(write(tmp_path, "log.json", [{"seq": -1}]))]
    index = tmp_path / "no-index" if what == "index" else index_dir
    code, out, err = judge_cli(index, task, traj, *extra)
    assert code == 2 and out is None and "error:" in err


def test_help_has_an_example() -> None:
    result = runner.invoke(app, ["judge", "--help"])
    assert result.exit_code == 0 and "Example: arena judge" in result.stdout
