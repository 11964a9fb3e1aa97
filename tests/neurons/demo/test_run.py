"""The demo's pieces: its agents, miner plan, validator settings, endpoint discovery, work dir."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from arena.tools import tool_schemas
from arena.types import ToolResult
from neurons.demo.agents import give_up_agent, local_model_agent
from neurons.demo.network import DemoInputError, Layout, child_env
from neurons.demo.run import (
    GIVE_UP_AGENT,
    LOCAL_MODEL_AGENT,
    DemoConfig,
    discover_model,
    plan_miners,
    run_demo,
    validator_env,
)
from neurons.demo.summary import chain_weights, export_counts
from neurons.miner.agents.contract import AgentRequest
from neurons.validator.settings import ValidatorSettings
from tests.neurons.chat_stub import ChatStub, reply_calls

REQUEST = AgentRequest(
    task_id="t1",
    episode_id="ep-1",
    query="red wool scarf under 20 pesos",
    tools=tuple(tool_schemas()),
    max_steps=6,
)


class Calls:
    """A tool caller that records calls and answers with one search hit."""

    def __init__(self) -> None:
        self.made: list[tuple[str, dict[str, Any]]] = []

    async def __call__(
        self, name: str, arguments: dict[str, Any], call_id: str, *, raw: str | None = None
    ) -> ToolResult:
        self.made.append((name, arguments))
        return ToolResult(content='[{"product_id": "p1", "title": "red scarf"}]')


async def test_give_up_agent_searches_once_and_never_answers() -> None:
    calls = Calls()
    output = await give_up_agent(REQUEST, calls)

    assert [name for name, _ in calls.made] == ["find_product", "terminate"]
    assert calls.made[0][1] == {"q": REQUEST.query, "page": 1}
    assert calls.made[1][1] == {"status": "failure"}
    trajectory = output.trajectory(REQUEST, "hotkey")
    assert [m.role for m in trajectory.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    called = [c.function.name for m in trajectory.messages for c in (m.tool_calls or ())]
    assert "recommend_product" not in called


async def test_give_up_agent_keeps_to_the_step_budget() -> None:
    calls = Calls()
    await give_up_agent(REQUEST.model_copy(update={"max_steps": 1}), calls)
    assert [name for name, _ in calls.made] == ["find_product"]


async def test_local_model_agent_sends_the_local_models_options(monkeypatch: pytest.MonkeyPatch) -> None:
    replies = [reply_calls(("terminate", {"status": "failure"}))]
    async with ChatStub(replies) as stub:
        monkeypatch.setenv("ARENA_LLM_BASE_URL", stub.base_url)
        monkeypatch.setenv("ARENA_LLM_MODEL", "tiny")
        output = await local_model_agent(REQUEST, Calls())
    body = stub.requests[0]
    assert body["model"] == "tiny" and body["tool_choice"] == "required" and body["max_tokens"] == 256
    # Tightened schemas: the free-text query is length-capped for the grammar.
    find = next(t for t in body["tools"] if t["function"]["name"] == "find_product")
    assert find["function"]["parameters"]["properties"]["q"]["pattern"].endswith("{0,64}$")
    assert output.stop == "terminated"


async def test_local_model_agent_needs_an_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARENA_LLM_BASE_URL", raising=False)
    with pytest.raises(RuntimeError, match="ARENA_LLM_BASE_URL"):
        await local_model_agent(REQUEST, Calls())


def test_plan_has_each_kind_per_count_with_the_right_agents(tmp_path: Path) -> None:
    config = DemoConfig(workdir=tmp_path, miners_per_agent=2, max_steps=5)
    plans = plan_miners(config, "http://127.0.0.1:1/v1", "smol")
    assert [p.name for p in plans] == ["scripted-1", "llm-1", "give-up-1", "scripted-2", "llm-2", "give-up-2"]
    by_kind = {p.kind: p for p in plans}
    assert by_kind["scripted"].agent == "scripted" and by_kind["scripted"].env == {}
    assert by_kind["give_up"].agent == GIVE_UP_AGENT
    llm = by_kind["llm"]
    assert llm.agent == LOCAL_MODEL_AGENT
    assert llm.env == {
        "ARENA_LLM_BASE_URL": "http://127.0.0.1:1/v1",
        "ARENA_LLM_MODEL": "smol",
        "ARENA_APP__MAX_STEPS": "5",
    }


def test_plan_uses_the_stock_llm_agent_for_another_endpoint(tmp_path: Path) -> None:
    from pydantic import SecretStr

    config = DemoConfig(workdir=tmp_path, llm_base_url="http://gpu:8000/v1", llm_api_key=SecretStr("k-123"))
    llm = next(p for p in plan_miners(config, "http://gpu:8000/v1", "qwen") if p.kind == "llm")
    assert llm.agent == "llm" and llm.env["ARENA_LLM_API_KEY"] == "k-123"
    assert not config.embedded_llm()


def test_no_llm_runs_no_llm_miners_and_shorter_episodes(tmp_path: Path) -> None:
    config = DemoConfig(workdir=tmp_path, llm=False)
    assert {p.kind for p in plan_miners(config, None, None)} == {"scripted", "give_up"}
    assert config.episode_budget() == 20.0 and DemoConfig(workdir=tmp_path).episode_budget() == 60.0
    assert DemoConfig(workdir=tmp_path, episode_seconds=33).episode_budget() == 33


def test_validator_env_is_valid_settings_and_seeded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    layout = Layout(tmp_path)
    env = validator_env(layout, DemoConfig(workdir=tmp_path, tasks_per_round=3))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = ValidatorSettings(network="local", local_chain=layout.chain, netuid=1)
    assert settings.round.tasks_per_round == 3 and settings.weights_min_blocks == 1
    assert settings.index_path() == layout.index and settings.export_path() == layout.export
    assert settings.database_url() == layout.database_url
    assert settings.world.enabled and settings.world.period_blocks == 10  # the demo runs world rounds
    static = validator_env(layout, DemoConfig(workdir=tmp_path, worlds=False))
    assert static["ARENA_WORLD__ENABLED"] == "False"
    assert (
        env["ARENA_TOKEN_SECRET"] == validator_env(layout, DemoConfig(workdir=tmp_path))["ARENA_TOKEN_SECRET"]
    )
    assert (
        env["ARENA_TOKEN_SECRET"]
        != validator_env(layout, DemoConfig(workdir=tmp_path, seed=1))["ARENA_TOKEN_SECRET"]
    )


def test_child_env_drops_the_callers_arena_settings_but_keeps_api_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ARENA_NETUID", "99")
    monkeypatch.setenv("ARENA_LLM_API_KEY", "k")
    env = child_env({"ARENA_PORT": "1"})
    assert "ARENA_NETUID" not in env and env["ARENA_LLM_API_KEY"] == "k" and env["ARENA_PORT"] == "1"


@pytest.fixture
def models_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A loopback server answering ``GET /v1/models`` with whatever the test puts in the list."""
    listed: list[dict[str, Any]] = []
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            seen.append(self.headers.get("Authorization", ""))
            body = json.dumps({"object": "list", "data": listed}).encode()
            self.send_response(200 if self.path == "/v1/models" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", listed
    finally:
        server.shutdown()
        server.server_close()


def test_discover_model_takes_the_first_listed(models_server: tuple[str, list[dict[str, Any]]]) -> None:
    url, listed = models_server
    listed += [{"id": "qwen3-8b"}, {"id": "other"}]
    assert discover_model(url, None) == "qwen3-8b"
    assert discover_model(url + "/", None) == "qwen3-8b"


def test_discover_model_refuses_an_empty_list_or_a_dead_endpoint(
    models_server: tuple[str, list[dict[str, Any]]],
) -> None:
    url, _ = models_server
    with pytest.raises(DemoInputError, match="lists no model"):
        discover_model(url, None)
    with pytest.raises(DemoInputError, match="cannot list"):
        discover_model(url.replace("/v1", "/nope"), None)


def test_the_demo_refuses_a_work_dir_in_use(tmp_path: Path) -> None:
    (tmp_path / "something").write_text("x")
    with pytest.raises(DemoInputError, match="not an empty directory"):
        run_demo(DemoConfig(workdir=tmp_path, llm=False), lambda line: None)


def test_chain_weights_are_empty_before_the_validator_sets_any(tmp_path: Path) -> None:
    from neurons.demo.network import create_chain

    layout = Layout(tmp_path)
    members = create_chain(layout, ["m-1"])
    assert chain_weights(layout.chain, members["validator"].uid) == {}


def test_export_counts_read_the_rows_by_origin_from_the_funnel(tmp_path: Path) -> None:
    assert export_counts(tmp_path) == []
    funnel = {
        "exports": {"sft": {"train": 2, "eval": 1}, "kto": {"train": 5, "eval": 1}, "axis_b": {"train": 0}},
        "origins": {"sft": {"native": 1, "converted": 2}, "kto": {"native": 0, "converted": 6}},
    }
    (tmp_path / "funnel.json").write_text(json.dumps(funnel), encoding="utf-8")
    counts = export_counts(tmp_path)
    assert [c.as_json() for c in counts] == [
        {"rows": 3, "native": 1, "converted": 2},
        {"rows": 6, "native": 0, "converted": 6},
    ]
    assert [c.format for c in counts] == ["sft", "kto"]
