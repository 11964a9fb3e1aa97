"""The gateway's record: served tool calls attest received ones byte for byte, once each, per episode."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from arena.episode import Budgets, EpisodeRegistry, EpisodeTokens
from arena.index import SearchIndex
from arena.inference import InferenceExchange, InferenceLog, completion_tool_calls
from arena.tools import ToolContext

SEARCH = '{"q": "running shoes", "page": 1}'


def completion(*calls: tuple[str, str]) -> dict[str, Any]:
    tool_calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": arguments}}
        for i, (name, arguments) in enumerate(calls)
    ]
    return {"choices": [{"index": 0, "message": {"role": "assistant", "tool_calls": tool_calls}}]}


def exchange(episode_id: str, seq: int, body: dict[str, Any], outcome: str = "ok") -> InferenceExchange:
    now = datetime.now(UTC)
    return InferenceExchange(
        episode_id=episode_id,
        seq=seq,
        upstream="http://model.example/v1",
        request="{}",
        response=json.dumps(body),
        status=200 if outcome == "ok" else 502,
        outcome=outcome,  # type: ignore[arg-type]
        started_at=now,
        finished_at=now,
    )


def test_completion_tool_calls_reads_the_first_choice_as_written() -> None:
    body = completion(("find_product", SEARCH), ("terminate", '{"status":"success"}'))
    body["choices"].append({"message": {"tool_calls": [{"function": {"name": "x", "arguments": "{}"}}]}})
    assert completion_tool_calls(body) == [("find_product", SEARCH), ("terminate", '{"status":"success"}')]
    assert completion_tool_calls({"choices": []}) == []
    assert (
        completion_tool_calls({"choices": [{"message": {"tool_calls": [{"function": {"name": 1}}]}}]}) == []
    )
    assert completion_tool_calls([1, 2]) == []


def test_a_served_call_attests_one_received_call_with_the_same_bytes() -> None:
    log = InferenceLog()
    log.append(exchange("ep-1", 0, completion(("find_product", SEARCH))))
    assert not log.attest("ep-1", "find_product", '{"q":"running shoes","page":1}')  # same value, other bytes
    assert not log.attest("ep-1", "view_product_information", SEARCH)
    assert not log.attest("ep-2", "find_product", SEARCH)  # another episode's completion
    assert log.attest("ep-1", "find_product", SEARCH)
    assert not log.attest("ep-1", "find_product", SEARCH)  # used up: a repeat is not attested


def test_failed_exchanges_serve_no_calls() -> None:
    log = InferenceLog()
    log.append(exchange("ep-1", 0, completion(("find_product", SEARCH)), outcome="upstream_error"))
    assert not log.attest("ep-1", "find_product", SEARCH)
    assert [e.seq for e in log.exchanges("ep-1")] == [0]


def test_reserve_bounds_the_exchanges_of_an_episode() -> None:
    log = InferenceLog()
    assert [log.reserve("ep-1", 2) for _ in range(3)] == [0, 1, None]
    assert log.reserve("ep-2", 2) == 0
    log.discard("ep-1")
    assert log.reserve("ep-1", 2) == 0


def test_the_tool_server_attests_a_call_only_after_the_completion_was_served(
    fixture_index: SearchIndex,
) -> None:
    registry = EpisodeRegistry(EpisodeTokens(b"s" * 32))
    _, token = registry.open_episode("t-1", "hk", Budgets(10, 60.0))
    claims = registry.authorize(token)
    ctx = ToolContext(index=fixture_index)
    early = registry.call_tool(token, "find_product", SEARCH, call_id="a", ctx=ctx)  # before any completion
    registry.inference.append(exchange(claims.episode_id, 0, completion(("find_product", SEARCH))))
    served = registry.call_tool(token, "find_product", SEARCH, call_id="b", ctx=ctx)
    again = registry.call_tool(token, "find_product", SEARCH, call_id="c", ctx=ctx)
    as_dict = registry.call_tool(token, "find_product", json.loads(SEARCH), call_id="d", ctx=ctx)
    assert [e.nonce_status for e in (early, served, again, as_dict)] == ["none", "valid", "none", "none"]
    assert [e.nonce_status for e in registry.log(claims.episode_id)] == ["none", "valid", "none", "none"]


def test_pruning_an_episode_forgets_its_exchanges() -> None:
    now = [1000.0]
    registry = EpisodeRegistry(EpisodeTokens(b"s" * 32), clock=lambda: now[0], token_grace_s=1.0)
    episode_id, _ = registry.open_episode("t-1", "hk", Budgets(10, 5.0))
    registry.inference.append(exchange(episode_id, 0, completion(("find_product", SEARCH))))
    assert registry.inference_log(episode_id)
    now[0] += 60
    assert registry.prune() == [episode_id]
    assert registry.inference_log(episode_id) == [] and not registry.inference.attest(
        episode_id, "find_product", SEARCH
    )
