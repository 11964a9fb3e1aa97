"""The tool-call endpoint: no MAC check for a token minted here, off the event loop, the exact answer."""

from __future__ import annotations

import threading
from typing import Any

import httpx

from arena.episode import Budgets, EpisodeRegistry, EpisodeTokens, TokenClaims
from arena.index import SearchIndex
from arena.toolcalls import ToolCallResponse
from arena.tools import ToolContext
from arena.toolserver import create_tool_app

SECRET = b"s" * 32


class CountingTokens(EpisodeTokens):
    def __init__(self, secret: bytes) -> None:
        super().__init__(secret)
        self.verified = 0

    def verify(self, token: str, *, now: float) -> TokenClaims:
        self.verified += 1
        return super().verify(token, now=now)


async def test_a_call_with_a_token_minted_here_checks_no_mac_and_runs_off_the_loop(
    fixture_index: SearchIndex,
) -> None:
    tokens = CountingTokens(SECRET)
    threads: list[str] = []

    class Registry(EpisodeRegistry):
        def call_authorized(self, *args: Any, **kwargs: Any) -> Any:
            threads.append(threading.current_thread().name)
            return super().call_authorized(*args, **kwargs)

    registry = Registry(tokens)
    _, token = registry.open_episode("t-1", "5Miner", Budgets(5, 60.0))
    app = create_tool_app(ToolContext(index=fixture_index), registry=registry)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://tools") as client:
        response = await client.post(
            "/v1/tools/find_product",
            json={"q": "chili powder", "page": 1},
            headers={"Authorization": f"Bearer {token}", "X-Arena-Call-Id": "c1"},
        )
    assert response.status_code == 200
    assert tokens.verified == 0  # the registry knows the token it minted by its string
    assert threads and threads[0] != threading.current_thread().name
    entry = registry.log(registry.authorize(token).episode_id)[0]
    expected = ToolCallResponse(call_id="c1", tool="find_product", content=entry.result, error=False, seq=0)
    assert response.content == expected.model_dump_json().encode()
    assert response.headers["content-type"] == "application/json"


async def test_only_post_reaches_a_tool(fixture_index: SearchIndex) -> None:
    app = create_tool_app(ToolContext(index=fixture_index), secret=SECRET)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://tools") as client:
        assert (await client.get("/v1/tools/find_product")).status_code == 405
