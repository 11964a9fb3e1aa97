"""The miner's HTTP app (``create_miner_app``): signed ``POST /v1/tasks`` running the agent; health; metrics.

A task request is authenticated before it is parsed: body read under a byte cap, btauth
signature, freshness and nonce checked (replay store shared by workers), the caller admitted
from one metagraph snapshot (registered, validator permit, minimum stake). The agent then runs
against the validator's tool server within the request's deadline and budgets, and the answer
is signed for the calling validator and bound to its request nonce. Nothing a caller sends can
crash the handler: every refusal is a JSON ``TaskRefusal`` with a reason code.

The metagraph is refreshed in the background (``neurons.miner.metagraph``), never on a
request's path; a request is admitted against the last good snapshot while it is younger than
``metagraph_max_age``, else refused with 503 ``metagraph_expired`` (never ``stale``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from arena.gateway import INFERENCE_PREFIX
from arena.httpguard import bounded_headers, wrong_content_type
from arena.jsondepth import json_depth
from arena.jsonkeys import duplicate_key
from arena.toolserver import read_body_within
from arena.types import Trajectory
from neurons import metrics
from neurons.chain.chaintypes import AuthFailure, AuthReason, MetagraphSnapshot, validator_admission
from neurons.chain.signing import NonceStore, sign_request, verify_request
from neurons.chain.wallets import Wallet, hotkey_of
from neurons.miner.agents.contract import Agent, AgentOutput, AgentRequest, GatewayAccess
from neurons.miner.metagraph import MetagraphCache, MetagraphUnusable
from neurons.miner.settings import MinerAppConfig
from neurons.miner.tool_client import EpisodeTools
from neurons.protocol import (
    HEADER_NONCE,
    HEALTH_PATH,
    METRICS_PATH,
    PROTOCOL_VERSION,
    TASKS_PATH,
    TaskRefusal,
    TaskRequest,
    TaskResponse,
    response_binding,
)

logger = logging.getLogger(__name__)

# Refusals that say "who are you?" are 401; "you may not" is 403.
_FORBIDDEN: frozenset[AuthReason] = frozenset({"unknown_hotkey", "no_permit", "low_stake"})


class _Refused(Exception):
    """A request refused with an HTTP status and a reason code."""

    def __init__(self, status: int, reason: str, detail: str, result: str | None = "invalid") -> None:
        super().__init__(reason)
        self.status, self.reason, self.detail, self.result = status, reason, detail, result


@dataclass
class _Miner:
    wallet: Wallet
    hotkey: str
    agent: Agent
    metagraph: MetagraphCache
    nonce_store: NonceStore
    config: MinerAppConfig
    slots: asyncio.Semaphore
    tools_http: httpx.AsyncClient | None = None


def create_miner_app(
    *,
    wallet: Wallet,
    agent: Agent,
    metagraph: Callable[[], Awaitable[MetagraphSnapshot]],
    nonce_store: NonceStore,
    config: MinerAppConfig | None = None,
    tool_transport: httpx.AsyncBaseTransport | None = None,
    on_shutdown: Callable[[], Awaitable[None]] | None = None,
) -> FastAPI:
    """Build the miner's FastAPI app.

    Args:
        wallet: the miner's wallet; its hotkey is the receiver requests must be signed for, and it
            signs every answer.
        agent: the agent run for each task (``neurons.miner.agents.load_agent(...)``).
        metagraph: returns the current snapshot (``chain.snapshot``); cached for ``metagraph_ttl``.
        nonce_store: the replay store (``make_nonce_store(path)`` when several workers serve).
        config: admission and bounds.
        tool_transport: httpx transport for tool calls (tests); default: real connections.
        on_shutdown: awaited when the app stops (e.g. ``chain.close``).
    """
    config = config or MinerAppConfig()
    miner = _Miner(
        wallet=wallet,
        hotkey=hotkey_of(wallet),
        agent=agent,
        metagraph=MetagraphCache(
            metagraph, refresh_interval=config.metagraph_ttl, max_age=config.metagraph_max_age
        ),
        nonce_store=nonce_store,
        config=config,
        slots=asyncio.Semaphore(config.max_concurrent_tasks),
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await miner.metagraph.refresh()  # before serving; a chain down now is retried in the background
        refresher = asyncio.create_task(miner.metagraph.run(), name="metagraph-refresher")
        async with httpx.AsyncClient(
            transport=tool_transport,
            limits=httpx.Limits(max_connections=4 * config.max_concurrent_tasks),
            trust_env=False,
        ) as http:
            miner.tools_http = http
            try:
                yield
            finally:
                miner.tools_http = None
                refresher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await refresher
                if on_shutdown is not None:
                    await on_shutdown()

    # No docs and no /openapi.json on the public port.
    app = FastAPI(
        title="Shopping Arena miner", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None
    )
    app.add_middleware(bounded_headers)

    @app.post(TASKS_PATH)
    async def tasks(request: Request) -> Response:
        try:
            return await _handle_task(miner, request)
        except _Refused as refused:
            if refused.result is not None:
                metrics.MINER_TASKS.labels(refused.result).inc()
            return _refusal(refused.status, refused.reason, refused.detail)
        except ClientDisconnect:  # logged at INFO where the body was read; the answer goes nowhere
            return Response(status_code=400)
        except Exception:  # the handler never crashes: our own fault, logged with its traceback
            logger.exception("task_handler_failed")
            metrics.MINER_TASKS.labels("internal_error").inc()
            return _refusal(500, "internal_error", "the miner failed to handle the request")

    @app.get(HEALTH_PATH)
    async def health() -> dict[str, Any]:
        age = miner.metagraph.age()
        return {
            "status": "ok",
            "hotkey": miner.hotkey,
            "protocol_version": PROTOCOL_VERSION,
            "metagraph_age_seconds": None if age is None else round(age, 1),
        }

    @app.get(METRICS_PATH)
    async def metrics_endpoint() -> Response:
        content, content_type = metrics.render_latest()
        return Response(content=content, media_type=content_type)

    return app


def _refusal(status: int, reason: str, detail: str) -> JSONResponse:
    return JSONResponse(TaskRefusal(reason=reason, detail=detail).model_dump(), status_code=status)


def _target(request: Request) -> str:
    """The request target exactly as sent (what the btauth signature covers)."""
    raw = request.scope.get("raw_path") or request.url.path.encode()
    query = request.scope.get("query_string", b"")
    target = raw.decode("latin-1").split("?", 1)[0]  # some ASGI servers leave the query in raw_path
    return f"{target}?{query.decode('latin-1')}" if query else target


async def _read_body(request: Request, limit: int) -> bytes:
    if (why := wrong_content_type(request.headers.get("content-type"))) is not None:
        raise _Refused(415, "content_type", why)
    body = await read_body_within(request, limit)
    if body is None:
        raise _Refused(413, "too_large", f"request body over {limit} bytes", "too_large")
    return body


async def _authenticate(miner: _Miner, request: Request, body: bytes) -> str:
    try:
        snapshot = miner.metagraph.current()  # never waits for the chain (see the module docstring)
    except MetagraphUnusable as exc:
        metrics.MINER_AUTH_FAILURES.labels(exc.reason).inc()
        raise _Refused(503, exc.reason, exc.detail, None) from exc
    try:
        # Off the event loop: the SQLite replay store may wait on another worker's write lock.
        return await run_in_threadpool(
            verify_request,
            request.headers,
            body,
            method=request.method,
            path=_target(request),
            self_hotkey=miner.hotkey,
            nonce_store=miner.nonce_store,
            max_age=miner.config.auth_max_age,
            admit=validator_admission(snapshot, min_stake=miner.config.min_stake),
        )
    except AuthFailure as exc:
        metrics.MINER_AUTH_FAILURES.labels(exc.reason).inc()
        logger.debug("auth_refused reason=%s", exc.reason)  # counted; strangers must not flood the log
        status = 403 if exc.reason in _FORBIDDEN else 401
        raise _Refused(status, exc.reason, str(exc), None) from exc


def _parse(miner: _Miner, body: bytes) -> TaskRequest:
    if json_depth(body) > miner.config.max_request_depth:
        raise _Refused(413, "too_deep", f"JSON nested deeper than {miner.config.max_request_depth}")
    if (key := duplicate_key(body)) is not None:  # the parser would keep the last one silently
        raise _Refused(422, "malformed", f"the body repeats the key {key[:64]!r}")
    try:
        task = TaskRequest.model_validate_json(body)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "body"
        raise _Refused(422, "malformed", f"{where}: {first['msg']}"[:300]) from None
    if task.protocol_version != PROTOCOL_VERSION:
        raise _Refused(400, "protocol_version", f"this miner speaks protocol {PROTOCOL_VERSION}")
    return task


async def _handle_task(miner: _Miner, request: Request) -> Response:
    received = time.monotonic()
    body = await _read_body(request, miner.config.max_request_bytes)
    caller = await _authenticate(miner, request, body)
    task = _parse(miner, body)
    margin = miner.config.deadline_margin
    seconds = min(task.seconds_left(), task.budgets.max_seconds) - margin
    if seconds <= 0:
        raise _Refused(400, "deadline_passed", "no time left before the deadline")
    if miner.slots.locked():
        raise _Refused(503, "busy", "the miner is at its concurrent task limit", "busy")
    async with miner.slots:
        output = await _run_agent(miner, task, seconds, deadline=received + seconds)
    body = _answer(miner, task, output)
    method, path = response_binding(request.headers[HEADER_NONCE], _target(request))
    headers = sign_request(miner.wallet, method=method, path=path, body=body, receiver=caller)
    metrics.MINER_TASKS.labels("completed").inc()
    metrics.MINER_TASK_DURATION.observe(time.monotonic() - received)
    logger.info(
        "task_done episode=%s messages=%d stop=%s seconds=%.2f",
        task.episode_id,
        len(output.messages),
        output.stop,
        time.monotonic() - received,
    )
    return Response(content=body, status_code=200, media_type="application/json", headers=headers)


async def _run_agent(miner: _Miner, task: TaskRequest, seconds: float, *, deadline: float) -> AgentOutput:
    if miner.tools_http is None:
        raise RuntimeError("the miner app is not started (no lifespan)")
    tools = EpisodeTools(
        miner.tools_http,
        base_url=task.tool_server_url,
        token=task.episode_token,
        max_calls=task.budgets.max_tool_calls,
        deadline=deadline,
    )
    agent_request = AgentRequest(
        task_id=task.task_id,
        episode_id=task.episode_id,
        query=task.query,
        tools=task.tools,
        max_steps=min(miner.config.max_steps, task.budgets.max_tool_calls),
        deadline_s=seconds,
        gateway=GatewayAccess(base_url=f"{task.tool_server_url}{INFERENCE_PREFIX}", token=task.episode_token),
    )
    try:
        # The agent is asked to stop by deadline_s; this is the backstop for one that does not.
        async with asyncio.timeout(seconds + miner.config.deadline_margin / 2):
            return await miner.agent(agent_request, tools)
    except TimeoutError:
        logger.warning("agent_timeout episode=%s seconds=%.1f", task.episode_id, seconds)
        raise _Refused(
            504, "agent_timeout", "the agent did not finish before the deadline", "timeout"
        ) from None
    except Exception as exc:
        logger.warning("agent_failed episode=%s error=%s", task.episode_id, type(exc).__name__, exc_info=True)
        raise _Refused(500, "agent_error", f"the agent raised {type(exc).__name__}", "agent_error") from exc


def _answer(miner: _Miner, task: TaskRequest, output: AgentOutput) -> bytes:
    try:
        trajectory = Trajectory(
            task_id=task.task_id,
            episode_id=task.episode_id,
            miner_hotkey=miner.hotkey,
            messages=tuple(output.messages),
            usage=output.usage,
        )
        body = TaskResponse(
            protocol_version=PROTOCOL_VERSION,
            episode_id=task.episode_id,
            trajectory=trajectory,
            stop=output.stop,
        ).to_bytes()
    except ValidationError as exc:
        logger.warning("agent_output_invalid episode=%s error=%s", task.episode_id, exc.errors()[:1])
        raise _Refused(
            500, "agent_output_invalid", "the agent's output is not a trajectory", "agent_error"
        ) from None
    if len(body) > task.budgets.max_response_bytes:
        limit = task.budgets.max_response_bytes
        raise _Refused(500, "too_large", f"answer of {len(body)} bytes over the {limit} allowed", "too_large")
    return body
