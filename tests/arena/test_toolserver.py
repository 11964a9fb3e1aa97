"""The HTTP tool server over ASGI: tools list, calls, auth 401/403, budgets 429, caps 413, 422, practice."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from arena.episode import Budgets, EpisodeRegistry, EpisodeTokens
from arena.index import SearchIndex
from arena.tools import ToolContext, tool_schemas
from arena.toolserver import Limits, create_tool_app

SECRET = b"s" * 32


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def registry(clock: Clock) -> EpisodeRegistry:
    return EpisodeRegistry(EpisodeTokens(SECRET), clock=clock, token_grace_s=60)


def _client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://tools")


@pytest.fixture
async def client(fixture_index: SearchIndex, registry: EpisodeRegistry) -> AsyncIterator[httpx.AsyncClient]:
    app = create_tool_app(ToolContext(index=fixture_index), registry=registry, practice=Budgets(5, 60.0))
    async with _client(app) as c:
        yield c


@pytest.fixture
async def closed_client(fixture_index: SearchIndex) -> AsyncIterator[httpx.AsyncClient]:
    async with _client(create_tool_app(ToolContext(index=fixture_index), secret=SECRET)) as c:
        yield c


async def practice_token(client: httpx.AsyncClient, body: Any = None) -> tuple[str, str]:
    response = await client.post("/v1/practice/episodes", json=body)
    assert response.status_code == 200, response.text
    data = response.json()
    return data["episode_id"], data["token"]


def bearer(token: str, call_id: str | None = None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {token}"}
    if call_id is not None:
        headers["X-Arena-Call-Id"] = call_id
    return headers


async def test_lists_the_active_tool_set(client: httpx.AsyncClient, fixture_index: SearchIndex) -> None:
    body = (await client.get("/v1/tools")).json()
    assert body["toolset"] == "sb-1"
    assert body["catalog_version"] == fixture_index.catalog_version
    assert body["tools"] == tool_schemas("sb-1")


async def test_arena2_server_lists_the_wider_set(fixture_index: SearchIndex) -> None:
    app = create_tool_app(ToolContext(index=fixture_index, toolset="arena-2"), secret=SECRET)
    async with _client(app) as c:
        names = [t["function"]["name"] for t in (await c.get("/v1/tools")).json()["tools"]]
    assert names[-2:] == ["find_products_in_same_shop", "calculate_voucher"]


def test_unknown_toolset_or_no_secret_is_refused(fixture_index: SearchIndex) -> None:
    with pytest.raises(ValueError, match="unknown tool set"):
        create_tool_app(ToolContext(index=fixture_index, toolset="sb-9"), secret=SECRET)
    with pytest.raises(ValueError, match="registry or a token secret"):
        create_tool_app(ToolContext(index=fixture_index))


async def test_health(client: httpx.AsyncClient) -> None:
    body = (await client.get("/health")).json()
    assert body == {
        "status": "ok",
        "toolset": "sb-1",
        "catalog_version": body["catalog_version"],
        "products": 20,
        "practice": True,
    }


async def test_practice_flow_calls_a_tool_and_reads_the_log(client: httpx.AsyncClient) -> None:
    episode_id, token = await practice_token(client, {"task_id": "t-demo"})
    response = await client.post(
        "/v1/tools/find_product",
        json={"q": "chili powder", "page": 1, "sort": "priceasc"},
        headers=bearer(token, "call_abc"),
    )
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"call_id", "tool", "content", "error", "seq"}
    assert (body["call_id"], body["tool"], body["error"], body["seq"]) == (
        "call_abc",
        "find_product",
        False,
        0,
    )
    assert [row["product_id"] for row in json.loads(body["content"])] == ["4003", "4002", "4001"]

    log = (await client.get(f"/v1/episodes/{episode_id}/log", headers=bearer(token))).json()
    assert log["episode_id"] == episode_id
    (entry,) = log["entries"]
    assert entry["call_id"] == "call_abc"
    assert entry["arguments"] == {"q": "chili powder", "page": 1, "sort": "priceasc"}
    assert entry["result"] == body["content"]
    assert entry["status"] == "ok"


async def test_practice_episode_without_body(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/practice/episodes")
    assert response.status_code == 200
    assert response.json()["budgets"] == {"max_calls": 5, "max_seconds": 60.0}


async def test_agent_faults_are_200_error_results_and_logged(client: httpx.AsyncClient) -> None:
    episode_id, token = await practice_token(client)
    cases = [
        ("find_product", b'{"q": "shoes", "page": 7}', "less than or equal to 5"),
        ("find_product", b'{"q": "shoes", "page": NaN}', "not valid JSON"),
        ("find_product", b"not json", "not valid JSON"),
        ("buy_now", b"{}", "unknown tool 'buy_now'"),
    ]
    for seq, (name, raw, fragment) in enumerate(cases):
        response = await client.post(
            f"/v1/tools/{name}", content=raw, headers={**bearer(token), "Content-Type": "application/json"}
        )
        assert response.status_code == 200
        body = response.json()
        assert body["error"] is True and body["seq"] == seq and body["call_id"] is None
        assert fragment in json.loads(body["content"])["error"]
    log = (await client.get(f"/v1/episodes/{episode_id}/log", headers=bearer(token))).json()["entries"]
    assert [e["tool"] for e in log] == ["find_product", "find_product", "find_product", "buy_now"]
    assert {e["status"] for e in log} == {"error"}


async def test_missing_or_forged_token_is_401(client: httpx.AsyncClient) -> None:
    _, token = await practice_token(client)
    forged = EpisodeTokens(b"z" * 32).mint(EpisodeTokens(SECRET).claims(token))
    for headers in (
        {},
        {"Authorization": token},
        {"Authorization": "Basic abc"},
        bearer(forged),
        bearer("x.y.z"),
    ):
        response = await client.post("/v1/tools/terminate", json={"status": "success"}, headers=headers)
        assert response.status_code == 401, headers
        assert response.headers["www-authenticate"] == "Bearer"
        assert isinstance(response.json()["detail"], str)


async def test_expired_token_is_401(client: httpx.AsyncClient, clock: Clock) -> None:
    _, token = await practice_token(client)
    clock.now += 60 + 60
    response = await client.post("/v1/tools/terminate", json={"status": "success"}, headers=bearer(token))
    assert response.status_code == 401
    assert "expired" in response.json()["detail"]


async def test_closed_episode_is_403(client: httpx.AsyncClient, registry: EpisodeRegistry) -> None:
    episode_id, token = await practice_token(client)
    registry.close_episode(episode_id)
    response = await client.post("/v1/tools/terminate", json={"status": "success"}, headers=bearer(token))
    assert response.status_code == 403
    assert response.json() == {"detail": "episode is closed"}


async def test_budgets_are_429_with_a_reason(client: httpx.AsyncClient, clock: Clock) -> None:
    _, token = await practice_token(client)
    for _ in range(5):
        ok = await client.post("/v1/tools/terminate", json={"status": "success"}, headers=bearer(token))
        assert ok.status_code == 200
    over = await client.post("/v1/tools/terminate", json={"status": "success"}, headers=bearer(token))
    assert over.status_code == 429
    assert over.json()["detail"] == "tool-call budget spent (5 calls)"

    _, late = await practice_token(client)
    clock.now += 61
    response = await client.post("/v1/tools/terminate", json={"status": "success"}, headers=bearer(late))
    assert response.status_code == 429
    assert "wall-time budget" in response.json()["detail"]


async def test_oversized_bodies_are_413_before_parsing(
    fixture_index: SearchIndex, registry: EpisodeRegistry
) -> None:
    app = create_tool_app(
        ToolContext(index=fixture_index),
        registry=registry,
        practice=Budgets(50, 60.0),
        limits=Limits(max_body_bytes=1024, max_json_depth=4),
    )
    async with _client(app) as c:
        episode_id, token = await practice_token(c)
        big = {"q": "x" * 2000, "page": 1}
        assert (await c.post("/v1/tools/find_product", json=big, headers=bearer(token))).status_code == 413

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: the stream itself is capped
            for _ in range(10):
                yield b" " * 200

        streamed = await c.post("/v1/tools/find_product", content=chunks(), headers=bearer(token))
        assert streamed.status_code == 413
        deep = b'{"q": [[[[["x"]]]]], "page": 1}'
        response = await c.post("/v1/tools/find_product", content=deep, headers=bearer(token))
        assert response.status_code == 413
        assert "deeper than 4" in response.json()["detail"]
        practice_deep = await c.post("/v1/practice/episodes", content=b"[[[[[[]]]]]]")
        assert practice_deep.status_code == 413
        # nothing was run or logged
        assert (await c.get(f"/v1/episodes/{episode_id}/log", headers=bearer(token))).json()["entries"] == []


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b'{"task_id": "t", "miner": "x"}', "miner: Extra inputs are not permitted"),
        (b'{"task_id": 5}', "task_id: Input should be a valid string"),
        (b'{"task_id": ""}', "task_id"),
        (b"{not json", "Invalid JSON"),
    ],
)
async def test_bad_practice_requests_are_short_422s(
    client: httpx.AsyncClient, body: bytes, fragment: str
) -> None:
    response = await client.post("/v1/practice/episodes", content=body)
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert isinstance(detail, str) and fragment in detail and len(detail) < 300


async def test_bad_headers_and_encoding_are_short_422s(client: httpx.AsyncClient) -> None:
    _, token = await practice_token(client)
    long_id = await client.post(
        "/v1/tools/terminate", json={"status": "success"}, headers=bearer(token, "c" * 500)
    )
    assert long_id.status_code == 422
    assert isinstance(long_id.json()["detail"], str) and "x-arena-call-id" in long_id.json()["detail"]
    latin = await client.post(
        "/v1/tools/find_product", content=b'{"q": "caf\xe9", "page": 1}', headers=bearer(token)
    )
    assert latin.status_code == 422
    assert latin.json() == {"detail": "request body is not UTF-8"}


async def test_practice_routes_are_absent_without_practice(closed_client: httpx.AsyncClient) -> None:
    assert (await closed_client.post("/v1/practice/episodes")).status_code == 404
    assert (await closed_client.get("/v1/episodes/ep-1/log", headers=bearer("t"))).status_code == 404
    assert (await closed_client.get("/health")).json()["practice"] is False


async def test_log_needs_that_episodes_token(client: httpx.AsyncClient) -> None:
    mine, token = await practice_token(client)
    theirs, _ = await practice_token(client)
    assert (await client.get(f"/v1/episodes/{mine}/log")).status_code == 401
    assert (await client.get(f"/v1/episodes/{theirs}/log", headers=bearer(token))).status_code == 403
    assert (await client.get(f"/v1/episodes/{mine}/log", headers=bearer("at1.e30.AAAA"))).status_code == 401


async def test_concurrent_http_calls_get_unique_seq(
    fixture_index: SearchIndex, registry: EpisodeRegistry
) -> None:
    app = create_tool_app(ToolContext(index=fixture_index), registry=registry, practice=Budgets(100, 60.0))
    async with _client(app) as c:
        episode_id, token = await practice_token(c)
        responses = await asyncio.gather(
            *(
                c.post(
                    "/v1/tools/find_product", json={"q": "shoes", "page": 1}, headers=bearer(token, f"c{i}")
                )
                for i in range(24)
            )
        )
        seqs = sorted(r.json()["seq"] for r in responses)
        log = (await c.get(f"/v1/episodes/{episode_id}/log", headers=bearer(token))).json()["entries"]
    assert seqs == list(range(24))
    assert sorted(e["call_id"] for e in log) == sorted(f"c{i}" for i in range(24))


async def test_router_mounts_in_another_app(fixture_index: SearchIndex, registry: EpisodeRegistry) -> None:
    from fastapi import FastAPI

    from arena.toolserver import add_error_handlers, create_tool_router

    app = FastAPI()
    add_error_handlers(app)
    app.include_router(create_tool_router(registry, ToolContext(index=fixture_index)))
    _, token = registry.open_episode("t-1", "5Miner", Budgets(3, 30.0))
    async with _client(app) as c:
        response = await c.post("/v1/tools/terminate", json={"status": "success"}, headers=bearer(token, "x"))
        assert response.json()["content"] == json.dumps("The conversation has ended with status: success.")
        assert (await c.post("/v1/practice/episodes")).status_code == 404


# ---------------------------------------------------------------------------- strict parsing


async def test_a_practice_body_repeating_a_key_is_a_422(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/practice/episodes", content=b'{"task_id": "a", "task_id": "b"}')
    assert response.status_code == 422
    assert "repeat" in response.json()["detail"] and "task_id" in response.json()["detail"]


async def test_tool_arguments_repeating_a_key_are_an_error_result(client: httpx.AsyncClient) -> None:
    _, token = await practice_token(client)
    body = b'{"q": "shoes", "page": 1, "page": 5}'
    response = await client.post("/v1/tools/find_product", content=body, headers=bearer(token))
    assert response.status_code == 200 and response.json()["error"] is True
    assert "repeat a key" in json.loads(response.json()["content"])["error"]


async def test_a_body_that_is_not_declared_json_is_415(client: httpx.AsyncClient) -> None:
    _, token = await practice_token(client)
    form = {**bearer(token), "Content-Type": "application/x-www-form-urlencoded"}
    tool = await client.post("/v1/tools/terminate", content=b'{"status": "success"}', headers=form)
    assert tool.status_code == 415 and "not application/json" in tool.json()["detail"]
    practice = await client.post(
        "/v1/practice/episodes", content=b"{}", headers={"Content-Type": "text/plain"}
    )
    assert practice.status_code == 415


async def test_too_many_headers_is_431(client: httpx.AsyncClient) -> None:
    _, token = await practice_token(client)
    headers = {**bearer(token), **{f"X-Pad-{i}": "1" for i in range(80)}}
    response = await client.post("/v1/tools/terminate", json={"status": "success"}, headers=headers)
    assert response.status_code == 431


@pytest.mark.parametrize("call_id", ["call\x1b[2J", "c\x01", "caf\xe9"])
async def test_a_call_id_with_control_characters_is_refused(client: httpx.AsyncClient, call_id: str) -> None:
    episode_id, token = await practice_token(client)
    headers = {"Authorization": f"Bearer {token}", "X-Arena-Call-Id": call_id.encode("latin-1")}
    response = await client.post("/v1/tools/terminate", json={"status": "success"}, headers=headers)  # type: ignore[arg-type]
    assert response.status_code == 400 and "printable ASCII" in response.json()["detail"]
    assert (await client.get(f"/v1/episodes/{episode_id}/log", headers=bearer(token))).json()["entries"] == []


async def test_an_authentic_token_with_malformed_claims_is_401_not_500(client: httpx.AsyncClient) -> None:
    import base64
    import hashlib
    import hmac

    payload = b'{"e": "ep-1", "h": "practice", "t": "t-1", "x": "later"}'
    mac = hmac.new(SECRET, b"shopping-arena/episode-token/v1\n" + payload, hashlib.sha256).digest()
    b64 = lambda data: base64.urlsafe_b64encode(data).rstrip(b"=").decode()  # noqa: E731
    token = f"at1.{b64(payload)}.{b64(mac)}"
    response = await client.post("/v1/tools/terminate", json={"status": "success"}, headers=bearer(token))
    assert response.status_code == 401 and "claims" in response.json()["detail"]


async def test_a_client_gone_mid_body_is_one_info_line_without_a_traceback(
    fixture_index: SearchIndex, registry: EpisodeRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_tool_app(ToolContext(index=fixture_index), registry=registry, practice=Budgets(5, 60.0))
    _, token = registry.open_episode("t-1", "practice", Budgets(5, 60.0))
    messages = iter(
        [{"type": "http.request", "body": b'{"q": "sh', "more_body": True}, {"type": "http.disconnect"}]
    )
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return next(messages)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/tools/find_product",
        "raw_path": b"/v1/tools/find_product",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"authorization", f"Bearer {token}".encode()), (b"content-type", b"application/json")],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000),
    }
    with caplog.at_level("DEBUG"):
        await app(scope, receive, send)
    gone = [r for r in caplog.records if "client_disconnected" in r.getMessage()]
    assert len(gone) == 1 and gone[0].levelname == "INFO"
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= 40]


async def test_unencodable_arguments_are_an_error_result_and_the_log_stays_readable(
    client: httpx.AsyncClient,
) -> None:
    episode_id, token = await practice_token(client)
    headers = {**bearer(token), "Content-Type": "application/json"}
    for name, raw in [
        ("view_product_information", b'{"product_ids":"\\udfff"}'),
        ("find_product", b'{"q":"\\ud800"}'),
        ("recommend_product", b'{"product_ids":["4001","\\ud800"]}'),
    ]:
        response = await client.post(f"/v1/tools/{name}", content=raw, headers=headers)
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["error"] is True
        assert "surrogate" in json.loads(body["content"])["error"]
    log = await client.get(f"/v1/episodes/{episode_id}/log", headers=bearer(token))
    assert log.status_code == 200, log.text
    entries = log.json()["entries"]
    assert [e["status"] for e in entries] == ["error", "error", "error"]
    # What the log keeps of refused arguments is their text, escapes and all: encodable.
    assert entries[0]["arguments"] == {"_raw": '{"product_ids":"\\udfff"}'}
    json.dumps(entries, ensure_ascii=False).encode("utf-8")
