from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Iterator
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
    build_index([Path(__file__).resolve().parents[2] / "fixtures" / "catalog.jsonl"], directory)
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


class JudgeHandler(http.server.BaseHTTPRequestHandler):
    """A loopback stand-in for an OpenAI-compatible judge: one fixed verdict for every request."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        verdict = {
            "inference_present": True,
            "tool_results_analysed": True,
            "datum_cited": True,
            "candidates_compared": False,
            "score": 3,
            "injection_attempt": False,
            "labels": [],
            "rationale": "ok",
        }
        reply = {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": json.dumps(verdict)},
                }
            ],
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def judge_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), JudgeHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()
    thread.join()


def test_reasoning_judge_endpoint(index_dir: Path, tmp_path: Path, judge_server: str) -> None:
    traj = write(tmp_path, "t.json", play(index_dir, SHOP_QUERY, SHOP_STEPS).to_wire())
    task = write(tmp_path, "task.json", shop_task().model_dump(mode="json"))
    code, out, _ = judge_cli(index_dir, task, traj, "--judge-url", judge_server, "--judge-model", "m-1")
    assert code == 0 and out is not None
    assert out["reasoning"] == {"value": 0.75, "model": "m-1"}
    assert out["score"] == pytest.approx(0.8 + 0.2 * 0.75)
    assert out["versions"]["judge_model"] == "m-1" and out["versions"]["prompt_hash"]


def test_unreachable_judge_leaves_reasoning_unscored(index_dir: Path, tmp_path: Path) -> None:
    traj = write(tmp_path, "t.json", play(index_dir, SHOP_QUERY, SHOP_STEPS).to_wire())
    task = write(tmp_path, "task.json", shop_task().model_dump(mode="json"))
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code, out, _ = judge_cli(index_dir, task, traj, "--judge-url", f"http://127.0.0.1:{port}/v1")
    assert code == 0 and out is not None
    assert out["reasoning"]["value"] is None and out["score"] == 1.0
