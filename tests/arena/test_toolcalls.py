"""The tool-call endpoint: no MAC check for a token minted here, on or off the loop, the exact answer."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from arena.episode import Budgets, EpisodeRegistry, EpisodeTokens, TokenClaims
from arena.index import SearchIndex
from arena.toolcalls import ON_LOOP_MAX_PRODUCTS, ToolCallResponse, runs_on_loop
from arena.tools import ToolContext
from arena.toolserver import create_tool_app, create_tool_router

SECRET = b"s" * 32


class CountingTokens(EpisodeTokens):
    def __init__(self, secret: bytes) -> None:
        super().__init__(secret)
        self.verified = 0

    def verify(self, token: str, *, now: float) -> TokenClaims:
        self.verified += 1
        return super().verify(token, now=now)


async def _call_threads(index: SearchIndex) -> tuple[list[str], CountingTokens, httpx.Response, Any]:
    """One find_product call through the app: the threads it ran on, the tokens, the answer, the registry."""
    tokens = CountingTokens(SECRET)
    threads: list[str] = []

    class Registry(EpisodeRegistry):
        def call_authorized(self, *args: Any, **kwargs: Any) -> Any:
            threads.append(threading.current_thread().name)
            return super().call_authorized(*args, **kwargs)

    registry = Registry(tokens)
    _, token = registry.open_episode("t-1", "5Miner", Budgets(5, 60.0))
    app = create_tool_app(ToolContext(index=index), registry=registry)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://tools") as client:
        response = await client.post(
            "/v1/tools/find_product",
            json={"q": "chili powder", "page": 1},
            headers={"Authorization": f"Bearer {token}", "X-Arena-Call-Id": "c1"},
        )
    return threads, tokens, response, (registry, token)


async def test_a_call_with_a_token_minted_here_checks_no_mac_and_runs_on_the_loop(
    fixture_index: SearchIndex,
) -> None:
    threads, tokens, response, (registry, token) = await _call_threads(fixture_index)
    assert response.status_code == 200
    assert tokens.verified == 0  # the registry knows the token it minted by its string
    assert threads == [threading.current_thread().name]  # a small catalog: no hop to a thread
    entry = registry.log(registry.authorize(token).episode_id)[0]
    expected = ToolCallResponse(call_id="c1", tool="find_product", content=entry.result, error=False, seq=0)
    assert response.content == expected.model_dump_json().encode()
    assert response.headers["content-type"] == "application/json"


async def test_over_a_large_catalog_a_call_runs_off_the_loop_with_the_same_answer(
    fixture_index: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, _, on_loop, _ = await _call_threads(fixture_index)
    monkeypatch.setattr("arena.toolcalls.ON_LOOP_MAX_PRODUCTS", len(fixture_index) - 1)
    threads, _, off_loop, _ = await _call_threads(fixture_index)
    assert threads and threads[0] != threading.current_thread().name
    assert off_loop.status_code == 200
    assert off_loop.content == on_loop.content


def test_the_loop_takes_calls_up_to_the_catalog_size_bound(fixture_index: SearchIndex) -> None:
    class Sized:
        def __init__(self, size: int) -> None:
            self.size = size

        def __len__(self) -> int:
            return self.size

    assert runs_on_loop(ToolContext(index=fixture_index))
    assert runs_on_loop(ToolContext(index=Sized(ON_LOOP_MAX_PRODUCTS)))  # type: ignore[arg-type]
    assert not runs_on_loop(ToolContext(index=Sized(ON_LOOP_MAX_PRODUCTS + 1)))  # type: ignore[arg-type]


async def test_only_post_reaches_a_tool(fixture_index: SearchIndex) -> None:
    app = create_tool_app(ToolContext(index=fixture_index), secret=SECRET)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://tools") as client:
        assert (await client.get("/v1/tools/find_product")).status_code == 405


async def test_tool_calls_first_matches_as_the_router_does(fixture_index: SearchIndex) -> None:
    registry = EpisodeRegistry(EpisodeTokens(SECRET))
    _, token = registry.open_episode("t-1", "5Miner", Budgets(20, 60.0))
    headers = {"Authorization": f"Bearer {token}"}
    ctx = ToolContext(index=fixture_index)
    routed_only = FastAPI()  # the router alone, without the fast path in front of it
    routed_only.include_router(create_tool_router(registry, ctx))
    answers: dict[str, list[tuple[int, str]]] = {}
    for label, app, root_path in (
        ("first", create_tool_app(ctx, registry=registry), ""),
        ("routed", routed_only, ""),
        ("root_path", create_tool_app(ctx, registry=registry), "/arena"),  # the router serves it
    ):
        transport = httpx.ASGITransport(app=app, root_path=root_path)
        async with httpx.AsyncClient(transport=transport, base_url="http://tools") as client:
            got = answers.setdefault(label, [])
            for path in ("/v1/tools/view_product_information", "/v1/tools/", "/v1/tools/a/b", "/v1/toolsx"):
                response = await client.post(f"{root_path}{path}", json={"product_ids": "x"}, headers=headers)
                got.append(
                    (response.status_code, response.json().get("content", "") if response.content else "")
                )
    assert answers["first"] == answers["routed"] == answers["root_path"]
    assert answers["first"][0][0] == 200
