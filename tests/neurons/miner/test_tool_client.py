"""The miner's tool caller: what it sends, and how every failure becomes an error result for the agent."""

from __future__ import annotations

import json

import httpx

from neurons.miner.tool_client import EpisodeTools
from tests.neurons.conftest import FakeClock


def tools_with(
    handler: httpx.MockTransport, *, max_calls: int = 5, clock: FakeClock | None = None
) -> EpisodeTools:
    clock = clock or FakeClock(now=0.0)
    return EpisodeTools(
        httpx.AsyncClient(transport=handler),
        base_url="http://tools.test/",
        token="tok",
        max_calls=max_calls,
        deadline=30.0,
        clock=clock,
    )


async def test_call_sends_token_call_id_and_arguments() -> None:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200, json={"call_id": "c1", "tool": "find_product", "content": "[]", "error": False, "seq": 0}
        )

    result = await tools_with(httpx.MockTransport(handle))("find_product", {"q": "tea"}, "c1")

    assert result.content == "[]" and not result.error
    request = seen[0]
    assert str(request.url) == "http://tools.test/v1/tools/find_product"
    assert request.headers["authorization"] == "Bearer tok"
    assert request.headers["x-arena-call-id"] == "c1"
    assert json.loads(request.content) == {"q": "tea"}


async def test_the_models_own_text_is_sent_byte_for_byte() -> None:
    bodies: list[bytes] = []

    def handle(request: httpx.Request) -> httpx.Response:
        bodies.append(request.content)
        return httpx.Response(
            200, json={"call_id": "c", "tool": "x", "content": "[]", "error": False, "seq": 0}
        )

    raw = '{"q":   "thé vert",\n "page": 1}'
    await tools_with(httpx.MockTransport(handle))("find_product", json.loads(raw), "c", raw=raw)
    assert bodies == [raw.encode("utf-8")]


async def test_tool_error_results_pass_through() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, json={"call_id": "c", "tool": "x", "content": "unknown tool", "error": True, "seq": 0}
        )

    result = await tools_with(httpx.MockTransport(handle))("x", {}, "c")
    assert result.error and result.content == "unknown tool"


async def test_refusals_become_error_results() -> None:
    for status, detail in ((401, "token expired"), (429, "tool call budget exhausted"), (413, "too big")):

        def handle(request: httpx.Request, status: int = status, detail: str = detail) -> httpx.Response:
            return httpx.Response(status, json={"detail": detail})

        result = await tools_with(httpx.MockTransport(handle))("find_product", {}, "c")
        assert result.error and str(status) in result.content and detail in result.content


async def test_unreachable_tool_server_is_an_error_result() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    result = await tools_with(httpx.MockTransport(handle))("find_product", {}, "c")
    assert result.error and "unreachable" in result.content


async def test_name_is_quoted_into_the_path() -> None:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(404, json={"detail": "Not Found"})

    await tools_with(httpx.MockTransport(handle))("../admin", {}, "c")
    assert seen[0].url.raw_path == b"/v1/tools/..%2Fadmin"


async def test_no_call_after_the_budget_or_the_deadline() -> None:
    sent: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(
            200, json={"call_id": "c", "tool": "t", "content": "ok", "error": False, "seq": 0}
        )

    clock = FakeClock(now=0.0)
    tools = tools_with(httpx.MockTransport(handle), max_calls=1, clock=clock)
    assert not (await tools("t", {}, "a")).error
    assert "budget exhausted" in (await tools("t", {}, "b")).content

    late = tools_with(httpx.MockTransport(handle), clock=clock)
    clock.advance(31.0)
    assert "deadline passed" in (await late("t", {}, "c")).content
    assert len(sent) == 1
