"""The miner app with real wallets, the local chain and a stand-in tool server: auth, admission, agents."""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from bittensor import http_auth
from fastapi import FastAPI
from prometheus_client import REGISTRY

from arena.index import SearchIndex
from arena.types import ToolLogEntry
from neurons.chain.chaintypes import MetagraphSnapshot
from neurons.chain.signing import make_nonce_store, verify_request
from neurons.errors import ChainUnavailable
from neurons.miner.agents.contract import Agent, AgentOutput, AgentRequest, ToolCaller
from neurons.miner.app import create_miner_app
from neurons.miner.settings import MinerAppConfig
from neurons.protocol import HEADER_NONCE, TASKS_PATH, TaskRequest, TaskResponse, response_binding
from tests.neurons.conftest import LocalNet
from tests.neurons.standins import ToolWorld, tool_agent

TOOLS_URL = "http://tools.test"


@dataclass
class Rig:
    """A miner app for the local net's miner1, its stand-in tool server, and an HTTP client to it."""

    net: LocalNet
    http: httpx.AsyncClient
    world: ToolWorld
    fetches: list[int] = field(default_factory=list)

    def sign(
        self,
        body: bytes,
        *,
        signer: str = "validator",
        receiver: str = "miner1",
        nonce_ns: int | None = None,
    ) -> dict[str, str]:
        return http_auth.sign(
            self.net.wallets[signer],
            method="POST",
            path=TASKS_PATH,
            body=body,
            receiver_ss58=self.net.hotkey(receiver),
            nonce_ns=nonce_ns,
        )

    async def post(self, body: bytes, headers: dict[str, str]) -> httpx.Response:
        return await self.http.post(TASKS_PATH, content=body, headers=headers)

    def request(self, **changes: Any) -> TaskRequest:
        """A request for miner1 with a fresh episode on the tool server."""
        return self.world.request(self.net.hotkey("miner1"), tool_server_url=TOOLS_URL, **changes)

    def log(self, request: TaskRequest) -> list[ToolLogEntry]:
        return self.world.log(request.episode_id)

    async def ask(self, request: TaskRequest | None = None, **sign: Any) -> httpx.Response:
        body = (request or self.request()).to_bytes()
        return await self.post(body, self.sign(body, **sign))


@pytest.fixture
def start_miner(net: LocalNet, tmp_path: Path, fixture_index: SearchIndex) -> Callable[..., Any]:
    @asynccontextmanager
    async def start(
        agent: Agent = tool_agent,
        metagraph: Callable[[], Awaitable[MetagraphSnapshot]] | None = None,
        wrap: Callable[[Callable[[], Awaitable[MetagraphSnapshot]]], Awaitable[MetagraphSnapshot]]
        | None = None,
        **config: Any,
    ) -> AsyncIterator[Rig]:
        chain = net.chain("miner1")
        world = ToolWorld(fixture_index)
        rig_fetches: list[int] = []

        async def counted() -> MetagraphSnapshot:
            rig_fetches.append(1)
            read = metagraph or chain.snapshot
            return await (wrap(read) if wrap is not None else read())

        app: FastAPI = create_miner_app(
            wallet=net.wallets["miner1"],
            agent=agent,
            metagraph=counted,
            nonce_store=make_nonce_store(tmp_path / "nonces.db"),
            config=MinerAppConfig(**config),
            tool_transport=httpx.ASGITransport(app=world.app()),
            on_shutdown=chain.close,
        )
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://miner.test") as http:
                yield Rig(net, http, world, rig_fetches)

    return start


def auth_failures(reason: str) -> float:
    return REGISTRY.get_sample_value("arena_miner_auth_failures_total", {"reason": reason}) or 0.0


def tasks_counted(result: str) -> float:
    return REGISTRY.get_sample_value("arena_miner_tasks_total", {"result": result}) or 0.0


# ---------------------------------------------------------------------------- the happy path


async def test_validator_request_runs_the_agent_and_gets_a_signed_answer(start_miner: Any) -> None:
    async with start_miner() as rig:
        request = rig.request()
        body = request.to_bytes()
        headers = rig.sign(body)
        answer = await rig.post(body, headers)

    assert answer.status_code == 200, answer.text
    method, path = response_binding(headers[HEADER_NONCE])
    signer = verify_request(
        answer.headers,
        answer.content,
        method=method,
        path=path,
        self_hotkey=rig.net.hotkey("validator"),
        nonce_store=make_nonce_store(),
    )
    assert signer == rig.net.hotkey("miner1")
    response = TaskResponse.model_validate_json(answer.content)
    trajectory = response.trajectory
    assert (trajectory.episode_id, trajectory.task_id) == (request.episode_id, request.task_id)
    assert trajectory.miner_hotkey == rig.net.hotkey("miner1")
    (logged,) = rig.log(request)  # the tool server's own record of the call
    assert (logged.tool, logged.call_id, logged.arguments["q"]) == ("find_product", "call_0", request.query)
    tool_message = next(m for m in trajectory.messages if m.role == "tool")
    assert tool_message.content == logged.result and "Running Shoes" in logged.result
    assert response.stop == "terminated"


# ---------------------------------------------------------------------------- auth refusals


@pytest.mark.parametrize(
    ("fault", "status", "reason"),
    [
        ("tampered", 401, "bad_signature"),
        ("stale", 401, "stale"),
        ("wrong_receiver", 401, "wrong_receiver"),
        ("crypto_header", 401, "unsupported_crypto"),
        ("unsigned", 401, "malformed"),
        ("no_permit", 403, "no_permit"),
        ("unknown_hotkey", 403, "unknown_hotkey"),
    ],
)
async def test_auth_failures_are_refused_with_their_reason(
    start_miner: Any, fault: str, status: int, reason: str
) -> None:
    calls: list[AgentRequest] = []

    async def agent(request: AgentRequest, call_tool: ToolCaller) -> AgentOutput:
        calls.append(request)
        return await tool_agent(request, call_tool)

    before = auth_failures(reason)
    async with start_miner(agent=agent) as rig:
        request = rig.request()
        body = request.to_bytes()
        headers = rig.sign(body)
        if fault == "tampered":
            body = body.replace(b"for men", b"for kids")
        elif fault == "stale":
            headers = rig.sign(body, nonce_ns=time.time_ns() - 60 * 10**9)
        elif fault == "wrong_receiver":
            headers = rig.sign(body, receiver="miner2")
        elif fault == "crypto_header":
            headers["X-Bittensor-Crypto"] = "ed25519"
        elif fault == "unsigned":
            headers = {}
        elif fault == "no_permit":
            headers = rig.sign(body, signer="miner2")
        elif fault == "unknown_hotkey":
            headers = rig.sign(body, signer="stranger")
        answer = await rig.post(body, headers)

    assert answer.status_code == status
    assert answer.json()["reason"] == reason
    assert auth_failures(reason) == before + 1
    assert not calls and not rig.log(request)


async def test_replayed_request_is_refused(start_miner: Any) -> None:
    async with start_miner() as rig:
        request = rig.request()
        body = request.to_bytes()
        headers = rig.sign(body)
        first = await rig.post(body, headers)
        again = await rig.post(body, headers)
    assert first.status_code == 200
    assert again.status_code == 401 and again.json()["reason"] == "replay"
    assert len(rig.log(request)) == 1


async def test_validator_below_the_minimum_stake_is_refused(start_miner: Any) -> None:
    async with start_miner(min_stake=5000.0) as rig:
        answer = await rig.ask()
    assert answer.status_code == 403 and answer.json()["reason"] == "low_stake"


# ---------------------------------------------------------------------------- the metagraph


async def test_metagraph_is_read_in_the_background_not_per_request(start_miner: Any) -> None:
    async with start_miner(metagraph_ttl=60.0) as rig:
        statuses = [(await rig.ask()).status_code for _ in range(3)]
    assert statuses == [200, 200, 200]
    assert len(rig.fetches) == 1  # the read before serving; the next is due in 60 s


async def test_a_slow_metagraph_read_never_delays_a_request_into_stale(start_miner: Any) -> None:
    # The red team's case: a cache expiry or a slow RPC during a request. Reads after the first
    # take 30 s (the chain read timeout), three times a signed request's 10 s freshness window.
    reads: list[int] = []
    first = asyncio.Event()

    async def slow(chain_snapshot: Callable[[], Awaitable[MetagraphSnapshot]]) -> MetagraphSnapshot:
        reads.append(1)
        if len(reads) > 1:
            await asyncio.sleep(30.0)
        first.set()
        return await chain_snapshot()

    async with start_miner(metagraph=None, metagraph_ttl=0.05, wrap=slow) as rig:
        await first.wait()
        await asyncio.sleep(0.2)  # the refresher is now inside a 30 s read
        answer = await rig.ask(nonce_ns=time.time_ns() - 5 * 10**9)  # 5 s old: fresh for 5 s more

    assert answer.status_code == 200, answer.text
    assert len(reads) == 2


async def test_no_metagraph_means_service_unavailable(start_miner: Any) -> None:
    async def down() -> MetagraphSnapshot:
        raise ChainUnavailable("metagraph", "timeout", "no answer")

    before = auth_failures("metagraph_unavailable")
    async with start_miner(metagraph=down) as rig:
        answer = await rig.ask()
    assert answer.status_code == 503 and answer.json()["reason"] == "metagraph_unavailable"
    assert auth_failures("metagraph_unavailable") == before + 1


async def test_an_expired_metagraph_is_refused_as_expired_not_stale(start_miner: Any) -> None:
    calls: list[int] = []

    async def once_then_down(chain_snapshot: Callable[[], Awaitable[MetagraphSnapshot]]) -> MetagraphSnapshot:
        calls.append(1)
        if len(calls) > 1:
            raise ChainUnavailable("metagraph", "timeout", "no answer")
        return await chain_snapshot()

    async with start_miner(metagraph_ttl=0.05, metagraph_max_age=0.2, wrap=once_then_down) as rig:
        ok = await rig.ask()
        await asyncio.sleep(0.4)
        expired = await rig.ask()

    assert ok.status_code == 200
    assert expired.status_code == 503 and expired.json()["reason"] == "metagraph_expired"


# ---------------------------------------------------------------------------- bad requests


async def test_body_over_the_cap_is_refused_before_auth(start_miner: Any) -> None:
    async with start_miner(max_request_bytes=2048) as rig:
        answer = await rig.ask(rig.request(query="shoes " * 400))
    assert answer.status_code == 413 and answer.json()["reason"] == "too_large"


async def test_deeply_nested_request_is_refused_before_parsing(start_miner: Any) -> None:
    async with start_miner(max_request_depth=16) as rig:
        wire = json.loads(rig.request().to_bytes())
        nested: Any = {}
        for _ in range(40):
            nested = {"x": nested}
        wire["tools"] = [nested]
        body = json.dumps(wire).encode()
        answer = await rig.post(body, rig.sign(body))
    assert answer.status_code == 413 and answer.json()["reason"] == "too_deep"


async def test_signed_request_that_is_not_a_task_is_malformed(start_miner: Any) -> None:
    async with start_miner() as rig:
        body = b'{"protocol_version": 1, "episode_id": "ep-1"}'
        answer = await rig.post(body, rig.sign(body))
    assert answer.status_code == 422 and answer.json()["reason"] == "malformed"


async def test_signed_request_repeating_a_key_is_malformed(start_miner: Any) -> None:
    async with start_miner() as rig:
        wire = rig.request().to_bytes()
        body = wire[:-1] + b', "query": "something else"}'  # signed as sent: the signer saw both
        answer = await rig.post(body, rig.sign(body))
    assert answer.status_code == 422 and answer.json()["reason"] == "malformed"
    assert "repeats the key 'query'" in answer.json()["detail"]


async def test_a_body_not_declared_json_is_415(start_miner: Any) -> None:
    async with start_miner() as rig:
        body = rig.request().to_bytes()
        answer = await rig.post(body, {**rig.sign(body), "Content-Type": "text/plain"})
    assert answer.status_code == 415 and answer.json()["reason"] == "content_type"


async def test_too_many_headers_is_431(start_miner: Any) -> None:
    async with start_miner() as rig:
        body = rig.request().to_bytes()
        answer = await rig.post(body, {**rig.sign(body), **{f"X-Pad-{i}": "1" for i in range(80)}})
    assert answer.status_code == 431


async def test_a_validator_gone_mid_body_is_one_info_line(
    start_miner: Any, caplog: pytest.LogCaptureFixture
) -> None:
    async with start_miner() as rig:
        app = rig.http._transport.app  # type: ignore[attr-defined]
        messages = iter(
            [{"type": "http.request", "body": b"{", "more_body": True}, {"type": "http.disconnect"}]
        )
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return next(messages)

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
            "scheme": "http", "path": TASKS_PATH, "raw_path": TASKS_PATH.encode(), "query_string": b"",
            "root_path": "", "headers": [], "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000),
        }  # fmt: skip
        with caplog.at_level("DEBUG"):
            await app(scope, receive, send)
    assert [r.levelname for r in caplog.records if "client_disconnected" in r.getMessage()] == ["INFO"]
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= 40]


async def test_other_protocol_version_is_refused(start_miner: Any) -> None:
    async with start_miner() as rig:
        answer = await rig.ask(rig.request(protocol_version=99))
    assert answer.status_code == 400 and answer.json()["reason"] == "protocol_version"


async def test_request_past_its_deadline_is_refused(start_miner: Any) -> None:
    past = datetime.now(UTC) - timedelta(seconds=1)
    async with start_miner() as rig:
        answer = await rig.ask(rig.request(deadline=past))
    assert answer.status_code == 400 and answer.json()["reason"] == "deadline_passed"


# ---------------------------------------------------------------------------- agent faults


async def test_agent_exception_is_an_agent_error_not_a_crash(start_miner: Any) -> None:
    async def broken(request: AgentRequest, call_tool: ToolCaller) -> AgentOutput:
        raise ZeroDivisionError("boom")

    before = tasks_counted("agent_error")
    async with start_miner(agent=broken) as rig:
        answer = await rig.ask()
        health = await rig.http.get("/health")
    assert answer.status_code == 500 and answer.json()["reason"] == "agent_error"
    assert health.status_code == 200
    assert tasks_counted("agent_error") == before + 1


async def test_agent_output_that_is_no_trajectory_is_refused(start_miner: Any) -> None:
    async def empty(request: AgentRequest, call_tool: ToolCaller) -> AgentOutput:
        return AgentOutput(messages=[])

    async with start_miner(agent=empty) as rig:
        answer = await rig.ask()
    assert answer.status_code == 500 and answer.json()["reason"] == "agent_output_invalid"


async def test_agent_that_ignores_the_deadline_is_stopped(start_miner: Any) -> None:
    seen: list[float] = []

    async def dawdler(request: AgentRequest, call_tool: ToolCaller) -> AgentOutput:
        seen.append(request.deadline_s)
        await asyncio.sleep(60)
        raise AssertionError("not reached")

    async with start_miner(agent=dawdler, deadline_margin=0.5) as rig:
        started = time.monotonic()
        answer = await rig.ask(rig.request(seconds=2.0))
        elapsed = time.monotonic() - started
    assert answer.status_code == 504 and answer.json()["reason"] == "agent_timeout"
    assert 1.0 < seen[0] <= 1.5  # the agent is told the time it has, less the margin
    assert elapsed < 10.0


async def test_answer_over_the_response_cap_is_not_sent(start_miner: Any) -> None:
    async with start_miner(agent=functools.partial(tool_agent, calls=20)) as rig:
        answer = await rig.ask(rig.request(max_response_bytes=2048, max_tool_calls=50))
    assert answer.status_code == 500 and answer.json()["reason"] == "too_large"


async def test_tool_calls_beyond_the_budget_are_not_sent(start_miner: Any) -> None:
    async with start_miner(agent=functools.partial(tool_agent, calls=4)) as rig:
        request = rig.request(max_tool_calls=2, server_calls=10)  # the miner stops first
        answer = await rig.ask(request)
    assert answer.status_code == 200
    assert len(rig.log(request)) == 2
    contents = [
        m.content
        for m in TaskResponse.model_validate_json(answer.content).trajectory.messages
        if m.role == "tool"
    ]
    assert contents[2:] == ["tool call budget exhausted (2 calls)"] * 2


async def test_miner_at_its_task_limit_answers_busy(start_miner: Any) -> None:
    release = asyncio.Event()
    entered = asyncio.Event()

    async def waiting(request: AgentRequest, call_tool: ToolCaller) -> AgentOutput:
        entered.set()
        await release.wait()
        return await tool_agent(request, call_tool)

    async with start_miner(agent=waiting, max_concurrent_tasks=1) as rig:
        first = asyncio.create_task(rig.ask())
        await entered.wait()
        second = await rig.ask(rig.request())
        release.set()
        assert (await first).status_code == 200
    assert second.status_code == 503 and second.json()["reason"] == "busy"


# ---------------------------------------------------------------------------- health and metrics


async def test_health_and_metrics(start_miner: Any) -> None:
    async with start_miner() as rig:
        await rig.ask()
        health = (await rig.http.get("/health")).json()
        exposition = (await rig.http.get("/metrics")).text
        schema = await rig.http.get("/openapi.json")
    assert schema.status_code == 404  # no API map on the public port
    assert health.pop("metagraph_age_seconds") >= 0
    assert health == {"status": "ok", "hotkey": rig.net.hotkey("miner1"), "protocol_version": 1}
    assert 'arena_miner_tasks_total{result="completed"}' in exposition
