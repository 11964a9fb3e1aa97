"""`arena env serve`: a real environment server on loopback, and its refusals of bad input."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from neurons.cli import app
from tests.neurons.cli.servers import env_serve, free_port, serving


def test_serve_runs_an_episode_over_http(world_pack_dir: Path, world_base_dir: Path) -> None:
    port = free_port()
    args = env_serve(world_base_dir, world_pack_dir, port)
    with serving(args, port=port) as url, httpx.Client(base_url=url, timeout=30.0) as client:
        assert client.get("/health").json()["toolset"] == "arena-3"
        reset = client.post("/v1/env/reset", json={"seed": 0}).json()
        session = f"/v1/env/sessions/{reset['session_id']}"
        found = client.post(
            f"{session}/step", json={"tool": "find_product", "arguments": {"q": "bag", "page": 1}}
        )
        assert found.status_code == 200 and not found.json()["done"]
        ended = client.post(f"{session}/step", json={"tool": "terminate", "arguments": {"status": "failure"}})
        assert ended.json()["done"] and ended.json()["final"]["score"] == 0.0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "give --world"),
        (["--world", "w", "--tasks", "t"], "give --world"),
        (["--tasks", "missing.jsonl", "--toolset", "sb-9"], "unknown tool set"),
    ],
)
def test_serve_refuses_bad_input(world_base_dir: Path, extra: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["env", "serve", "--index", str(world_base_dir), *extra])
    assert result.exit_code == 2 and message in result.output


def test_serve_help_has_an_example() -> None:
    result = CliRunner().invoke(app, ["env", "serve", "--help"])
    assert result.exit_code == 0 and "Example: arena env serve" in result.output


def test_rollouts_of_a_python_policy_end_in_an_export(
    world_pack_dir: Path, world_base_dir: Path, tmp_path: Path
) -> None:
    args = ["env", "rollouts", "--index", str(world_base_dir), "--world", str(world_pack_dir)]
    args += ["--agent", "scripted", "--k", "2", "--max-tasks", "2", "--out", str(tmp_path / "run"), "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert (report["episodes"], report["tasks"], report["k"], report["policy"]) == (4, 2, 2, "scripted")
    assert report["weights_hash"].startswith("sha256:")  # the scripted agent's source
    assert {"sft", "kto"} <= set(report["rows"])  # and axis_b: the scripted agent's traces, set aside
    assert (tmp_path / "run" / "export" / "manifest.json").is_file()
    again = CliRunner().invoke(app, [*args[:-1], "--k", "3", "--json"])
    assert again.exit_code == 1 and "use a fresh --out" in again.output


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "give one policy"),
        (["--agent", "scripted", "--model-url", "http://x/v1"], "give one policy"),
        (["--model-url", "http://x/v1"], "give one policy"),
        (["--gguf", "missing.gguf"], "no file at"),
        (["--agent", "no_such_module:agent"], "cannot import"),
    ],
)
def test_rollouts_refuse_a_bad_policy(
    world_pack_dir: Path, world_base_dir: Path, tmp_path: Path, extra: list[str], message: str
) -> None:
    args = ["env", "rollouts", "--index", str(world_base_dir), "--world", str(world_pack_dir)]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path), *extra])
    assert result.exit_code == 2 and message in result.output
