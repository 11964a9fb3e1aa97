"""The inference gateway over real HTTP on loopback: forwarding, record, attestation, bounds, faults."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request
from starlette.responses import Response

from arena.episode import Budgets, EpisodeRegistry, EpisodeTokens
from arena.gateway import COMPLETIONS_PATH, HEADER_UPSTREAM, HEADER_UPSTREAM_KEY, Gateway, GatewayLimits
from arena.httpguard import address_policy
from arena.index import SearchIndex
from arena.tools import ToolContext
from arena.toolserver import create_tool_app
from tests.neurons.standins import serve_app

KEY = "sk-miner-secret-0123456789"
LOOPBACK = address_policy(["127.0.0.0/8"])
SEARCH = '{"q":  "trail shoes", "page": 1}'  # the model's own spacing, kept byte for byte


def completion_bytes(arguments: str = SEARCH) -> bytes:
    call = {"id": "call_1", "type": "function", "function": {"name": "find_product", "arguments": arguments}}
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "upstream-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [call]}}],
    }
    return (json.dumps(body, indent=1) + "\n").encode()


@dataclass
class Upstream:
    """A scripted OpenAI-compatible model server; ``mode`` says how it answers, ``seen`` what it got."""

    mode: str = "ok"
    seen: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    url: str = ""

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def complete(request: Request) -> Response:
            self.seen.append((dict(request.headers), await request.body()))
            if self.mode == "slow":
                await asyncio.sleep(30)
            if self.mode == "big":
                return Response(b'{"pad": "' + b"x" * 4096 + b'"}', media_type="application/json")
            if self.mode == "denied":
                detail = {"error": {"message": f"Incorrect API key provided: {KEY}"}}
                return Response(json.dumps(detail).encode(), status_code=401, media_type="application/json")
            if self.mode == "text":
                return Response(b"<html>hello</html>", media_type="text/html")
            return Response(completion_bytes(), media_type="application/json")

        return app


@dataclass
class Rig:
    registry: EpisodeRegistry
    gateway: Gateway
    upstream: Upstream
    http: httpx.AsyncClient
    token: str
    episode_id: str

    async def complete(self, body: bytes | None = None, **headers: str) -> httpx.Response:
        sent = {"Authorization": f"Bearer {self.token}", HEADER_UPSTREAM: self.upstream.url + "/v1"}
        sent[HEADER_UPSTREAM_KEY] = KEY
        sent.update(headers)
        content = (
            body if body is not None else b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'
        )
        return await self.http.post(COMPLETIONS_PATH, content=content, headers=sent)


async def start(
    stack: AsyncExitStack, index: SearchIndex, *, limits: GatewayLimits | None = None, policy: Any = LOOPBACK
) -> Rig:
    upstream = Upstream()
    upstream.url = await stack.enter_async_context(serve_app(upstream.app(), force_exit=True))
    registry = EpisodeRegistry(EpisodeTokens(b"g" * 32))
    gateway = Gateway(registry, policy, limits or GatewayLimits())
    stack.push_async_callback(gateway.aclose)
    app = create_tool_app(ToolContext(index=index), registry=registry)
    app.include_router(gateway.router())
    base = await stack.enter_async_context(serve_app(app, force_exit=True))
    http = await stack.enter_async_context(httpx.AsyncClient(base_url=base, timeout=30))
    episode_id, token = registry.open_episode("t-1", "hk-miner", Budgets(10, 120.0))
    return Rig(registry, gateway, upstream, http, token, episode_id)


@pytest.fixture
async def rig(fixture_index: SearchIndex) -> AsyncIterator[Rig]:
    async with AsyncExitStack() as stack:
        yield await start(stack, fixture_index)


async def test_a_completion_is_forwarded_and_served_byte_for_byte_and_logged(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    body = b'{"model":"m",  "messages":[{"role":"user","content":"caf\xc3\xa9"}]}'
    response = await rig.complete(body)
    assert response.status_code == 200 and response.content == completion_bytes()
    headers, received = rig.upstream.seen[0]
    assert received == body and headers["authorization"] == f"Bearer {KEY}"
    assert HEADER_UPSTREAM_KEY.lower() not in headers and rig.token not in json.dumps(headers)
    [exchange] = rig.registry.inference_log(rig.episode_id)
    assert (
        exchange.outcome == "ok" and exchange.status == 200 and exchange.seq == 0 and exchange.tool_calls == 1
    )
    assert exchange.request.encode() == body and exchange.response.encode() == completion_bytes()
    assert exchange.upstream == rig.upstream.url + "/v1"
    assert KEY not in exchange.model_dump_json() and KEY not in caplog.text


async def test_the_calls_of_a_served_completion_are_attested_at_the_tool_server(rig: Rig) -> None:
    assert (await rig.complete()).status_code == 200
    headers = {"Authorization": f"Bearer {rig.token}", "X-Arena-Call-Id": "call_1"}
    respaced = await rig.http.post(
        "/v1/tools/find_product", content=SEARCH.replace("  ", " "), headers=headers
    )
    same = await rig.http.post("/v1/tools/find_product", content=SEARCH, headers=headers)
    again = await rig.http.post("/v1/tools/find_product", content=SEARCH, headers=headers)
    assert all(r.status_code == 200 for r in (respaced, same, again))
    assert [e.nonce_status for e in rig.registry.log(rig.episode_id)] == ["none", "valid", "none"]


async def test_an_upstream_on_loopback_is_refused_unless_allowed(fixture_index: SearchIndex) -> None:
    async with AsyncExitStack() as stack:
        rig = await start(stack, fixture_index, policy=address_policy())
        by_address = await rig.complete()
        by_name = await rig.complete(**{HEADER_UPSTREAM: rig.upstream.url.replace("127.0.0.1", "localhost")})
        metadata = await rig.complete(**{HEADER_UPSTREAM: "http://169.254.169.254/latest"})
        nat64 = await rig.complete(
            **{HEADER_UPSTREAM: "http://[64:ff9b::7f00:1]:8000/v1"}
        )  # reaches 127.0.0.1
    for response in (by_address, by_name, metadata, nat64):
        assert response.status_code == 403 and response.json()["error"]["code"] == "upstream_refused"
    assert rig.upstream.seen == []
    exchanges = rig.registry.inference_log(rig.episode_id)
    assert [e.outcome for e in exchanges] == ["refused"] * 4


@pytest.mark.parametrize(
    ("upstream", "code"),
    [
        ("ftp://127.0.0.1/v1", "upstream_invalid"),
        (f"http://user:{KEY}@127.0.0.1/v1", "upstream_invalid"),
        (f"http://127.0.0.1/v1?key={KEY}", "upstream_invalid"),
        ("", "upstream_missing"),
    ],
)
async def test_an_upstream_url_that_is_not_plain_is_refused(rig: Rig, upstream: str, code: str) -> None:
    response = await rig.complete(**{HEADER_UPSTREAM: upstream})
    assert response.status_code == 400 and response.json()["error"]["code"] == code
    [exchange] = rig.registry.inference_log(rig.episode_id)
    assert exchange.outcome == "refused" and KEY not in exchange.upstream and rig.upstream.seen == []


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b'{"model": "m", "stream": true, "messages": []}', 400, "stream_unsupported"),
        (b'{"model": "m", "n": 3, "messages": []}', 400, "n_unsupported"),
        (b"[1, 2]", 400, "not_json"),
        (b"\xff\xfe", 400, "not_json"),
        (b'{"a": ' * 40 + b"1" + b"}" * 40, 413, "request_too_deep"),
        (b'{"pad": "' + b"x" * 300_000 + b'"}', 413, "request_too_large"),
    ],
)
async def test_requests_outside_the_bounds_are_refused_and_logged(
    rig: Rig, body: bytes, status: int, code: str
) -> None:
    response = await rig.complete(body)
    assert response.status_code == status and response.json()["error"]["code"] == code
    [exchange] = rig.registry.inference_log(rig.episode_id)
    assert exchange.outcome == "refused" and rig.upstream.seen == []


async def test_the_exchanges_of_an_episode_are_bounded(fixture_index: SearchIndex) -> None:
    async with AsyncExitStack() as stack:
        rig = await start(stack, fixture_index, limits=GatewayLimits(max_exchanges=2))
        statuses = [(await rig.complete()).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]
    assert len(rig.registry.inference_log(rig.episode_id)) == 2  # the refused third is not stored


@pytest.mark.parametrize(
    ("mode", "status", "code"),
    [
        ("slow", 504, "upstream_timeout"),
        ("big", 502, "response_too_large"),
        ("denied", 502, "upstream_status"),
        ("text", 502, "upstream_not_json"),
    ],
)
async def test_upstream_failures_are_the_miners_and_never_echo_the_key(
    fixture_index: SearchIndex, mode: str, status: int, code: str
) -> None:
    limits = GatewayLimits(max_response_bytes=2048, upstream_timeout_s=0.5)
    async with AsyncExitStack() as stack:
        rig = await start(stack, fixture_index, limits=limits)
        rig.upstream.mode = mode
        response = await rig.complete()
    assert response.status_code == status and response.json()["error"]["code"] == code
    assert KEY not in response.text
    [exchange] = rig.registry.inference_log(rig.episode_id)
    assert exchange.outcome == "upstream_error" and KEY not in exchange.model_dump_json()


async def test_an_unreachable_upstream_is_the_miners(rig: Rig) -> None:
    response = await rig.complete(**{HEADER_UPSTREAM: "http://127.0.0.1:9/v1"})
    assert response.status_code == 502 and response.json()["error"]["code"] == "upstream_unreachable"
    assert [e.outcome for e in rig.registry.inference_log(rig.episode_id)] == ["upstream_error"]


async def test_the_gateways_own_failures_are_ours(rig: Rig) -> None:
    def broken(request: httpx.Request) -> httpx.Response:
        raise RuntimeError("a bug of ours")

    rig.gateway.in_flight = rig.gateway.limits.max_concurrent
    busy = await rig.complete()
    rig.gateway.in_flight = 0
    await rig.gateway.client.aclose()
    rig.gateway.client = httpx.AsyncClient(transport=httpx.MockTransport(broken))
    failed = await rig.complete()
    assert busy.status_code == 503 and busy.json()["error"]["code"] == "gateway_busy"
    assert failed.status_code == 500 and failed.json()["error"]["code"] == "gateway_error"
    outcomes = [e.outcome for e in rig.registry.inference_log(rig.episode_id)]
    assert outcomes == ["gateway_error", "gateway_error"]


async def test_a_bad_or_closed_token_is_refused_before_anything_is_logged(rig: Rig) -> None:
    missing = await rig.http.post(COMPLETIONS_PATH, content=b"{}")
    forged = await rig.complete(Authorization="Bearer at1.forged.token")
    rig.registry.close_episode(rig.episode_id)
    closed = await rig.complete()
    assert [r.status_code for r in (missing, forged, closed)] == [401, 401, 403]
    assert rig.registry.inference_log(rig.episode_id) == [] and rig.upstream.seen == []
