"""The validator's HTTP app (``create_validator_app``): the tool server for miners' agents, /health, /metrics.

One FastAPI app in the validator's single process: the tool routes of ``arena.toolserver``
mounted on the episode registry the rounds open episodes in, the inference gateway's route
(``arena.gateway``) on the same registry, a health document, and the Prometheus exposition.
Tool calls are counted as they are logged (``MeteredToolLog``), gateway exchanges and attested
calls likewise (``MeteredInferenceLog``), and tool-server requests by status code (a plain ASGI
wrapper).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arena.episode import InMemoryToolLog
from arena.inference import InferenceExchange, InferenceLog
from arena.tools import TOOLSETS
from arena.toolserver import add_error_handlers, include_tool_router
from arena.types import ToolLogEntry
from neurons import metrics
from neurons.protocol import HEALTH_PATH, METRICS_PATH

logger = logging.getLogger(__name__)

_TOOL_PREFIX = "/v1/"


class MeteredToolLog(InMemoryToolLog):
    """The episode registry's tool log (in memory), counting each call by tool and status as it lands.

    An ``InMemoryToolLog``, so the registry's pruning also frees the logs of expired episodes.
    Tool names come from miners' agents: names outside every tool set are counted as
    ``unknown`` so the label set stays bounded.
    """

    def __init__(self) -> None:
        super().__init__()
        self._known = {tool.name for tools in TOOLSETS.values() for tool in tools}

    def append(self, entry: ToolLogEntry) -> None:
        """Record one executed tool call and count it."""
        super().append(entry)
        tool = entry.tool if entry.tool in self._known else "unknown"
        metrics.TOOL_CALLS.labels(tool, entry.status).inc()
        seconds = (entry.finished_at - entry.started_at).total_seconds()
        metrics.TOOL_CALL_DURATION.labels(tool).observe(max(0.0, seconds))


class MeteredInferenceLog(InferenceLog):
    """The inference gateway's record (in memory), counting exchanges by outcome and attested calls."""

    def append(self, exchange: InferenceExchange) -> None:
        """Record one exchange and count it."""
        super().append(exchange)
        metrics.GATEWAY_EXCHANGES.labels(exchange.outcome).inc()

    def attest(self, episode_id: str, name: str, arguments: str) -> bool:
        """Attest one received call (``InferenceLog.attest``), counting it when it is."""
        attested = super().attest(episode_id, name, arguments)
        if attested:
            metrics.ATTESTED_CALLS.inc()
        return attested


def _counted_tool_requests(app: ASGIApp) -> ASGIApp:
    """Wrap ``app`` so each tool-server request is counted by its status code.

    A plain ASGI wrapper that reads the status off ``http.response.start``: Starlette's
    ``@app.middleware("http")`` would run every tool call through a task group and memory
    streams, a cost on the hot path (``arena.toolcalls``) as large as the route itself.
    """

    async def counted(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(_TOOL_PREFIX):
            await app(scope, receive, send)
            return
        status = "500"  # an exception escaping the route becomes a 500 further out

        async def send_counted(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = str(message["status"])
            await send(message)

        try:
            await app(scope, receive, send_counted)
        finally:
            metrics.TOOLSERVER_REQUESTS.labels(status).inc()

    return counted


def create_validator_app(
    *,
    tool_router: Any,
    health: Callable[[], dict[str, Any]],
    gateway_router: Any = None,
    on_startup: Callable[[], Awaitable[None]] | None = None,
    on_shutdown: Callable[[], Awaitable[None]] | None = None,
) -> FastAPI:
    """Build the validator's app.

    Args:
        tool_router: ``arena.toolserver.create_tool_router(registry, ctx)`` over the rounds' registry.
        health: returns the ``/health`` document.
        gateway_router: ``arena.gateway.Gateway(...).router()`` over the same registry, or None
            (the inference gateway off).
        on_startup: awaited in the lifespan before serving (starts the scheduler).
        on_shutdown: awaited when the app stops (stops the scheduler, closes clients).
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if on_startup is not None:
            await on_startup()
        try:
            yield
        finally:
            if on_shutdown is not None:
                await on_shutdown()

    # No docs and no /openapi.json: the public port maps nothing for anyone beyond what it serves.
    app = FastAPI(
        title="Shopping Arena validator", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None
    )
    add_error_handlers(app)
    include_tool_router(app, tool_router)
    if gateway_router is not None:
        app.include_router(gateway_router)

    app.add_middleware(_counted_tool_requests)

    @app.get(HEALTH_PATH)
    async def health_endpoint() -> dict[str, Any]:
        return health()

    @app.get(METRICS_PATH)
    async def metrics_endpoint() -> Response:
        content, content_type = metrics.render_latest()
        return Response(content=content, media_type=content_type)

    return app


__all__ = ["MeteredInferenceLog", "MeteredToolLog", "create_validator_app"]
