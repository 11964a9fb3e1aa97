"""The HTTP tool server: a FastAPI router (mounted by the validator) and a standalone app factory.

Routes: ``GET /v1/tools``, ``POST /v1/tools/{name}`` (``Authorization: Bearer <episode token>``,
``X-Arena-Call-Id``), and in practice mode ``POST /v1/practice/episodes`` and
``GET /v1/episodes/{episode_id}/log``; the standalone app adds ``GET /health``.
"""

from __future__ import annotations

import logging
from typing import Any, cast

from fastapi import APIRouter, FastAPI, Header, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect
from starlette.responses import Response

from arena.episode import Budgets, EpisodeRegistry, EpisodeTokens
from arena.errors import EpisodeError
from arena.httpguard import bounded_headers, wrong_content_type
from arena.jsondepth import deeper_than
from arena.jsonkeys import duplicate_key
from arena.toolcalls import (
    Limits,
    ToolCallEndpoint,
    ToolCallResponse,
    bearer_token,
    episode_status,
    receive_body_within,
    runs_on_loop,
    tool_calls_first,
)
from arena.tools import DEFAULT_TOOLSET, TOOLSETS, ToolContext, tool_schemas

logger = logging.getLogger(__name__)

PRACTICE_HOTKEY = "practice"
DEFAULT_PRACTICE_BUDGETS = Budgets(max_calls=100, max_seconds=900.0)


class PracticeRequest(BaseModel):
    """Optional body of ``POST /v1/practice/episodes``."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)

    task_id: str = Field(default="practice", min_length=1, max_length=128)


async def read_body_within(request: Request, max_bytes: int) -> bytes | None:
    """Read a request body, or None as soon as it (or its declared length) exceeds ``max_bytes``.

    Raises:
        ClientDisconnect: the client went away before the body was complete (logged at INFO).
    """
    return await receive_body_within(
        request.receive, request.headers.get("content-length"), max_bytes, path=request.url.path
    )


def refuse_wrong_content_type(request: Request) -> None:
    """Raise 415 unless the request's body is declared JSON (or not declared at all)."""
    if (why := wrong_content_type(request.headers.get("content-type"))) is not None:
        raise HTTPException(415, why)


async def read_capped_body(request: Request, limits: Limits) -> bytes:
    """Read a request body, refusing a wrong Content-Type (415) and one over the size or depth cap (413)."""
    refuse_wrong_content_type(request)
    body = await read_body_within(request, limits.max_body_bytes)
    if body is None:
        raise HTTPException(413, f"request body over {limits.max_body_bytes} bytes")
    if deeper_than(body, limits.max_json_depth):
        raise HTTPException(413, f"request JSON nested deeper than {limits.max_json_depth} levels")
    return body


def _bearer(authorization: str | None) -> str:
    token = bearer_token(authorization)
    if token is None:
        raise HTTPException(401, "missing bearer token", headers={"WWW-Authenticate": "Bearer"})
    return token


def _episode_http_error(exc: EpisodeError) -> HTTPException:
    status, headers = episode_status(exc)
    return HTTPException(status, str(exc), headers=headers)


def short_validation_message(errors: Any) -> str:
    """Summarise pydantic/FastAPI validation errors as one short line."""
    parts = []
    for err in list(errors)[:3]:
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "request"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


async def _client_gone(request: Request, exc: Exception) -> Response:
    # Logged where the body was read; the answer goes nowhere, so it carries nothing.
    return Response(status_code=400)


async def _validation_handler(request: Request, exc: Exception) -> JSONResponse:
    errors = exc.errors() if isinstance(exc, RequestValidationError | ValidationError) else []
    return JSONResponse({"detail": short_validation_message(errors)}, status_code=422)


def add_error_handlers(app: FastAPI) -> None:
    """Install the short 422 handler, the quiet client-gone answer and the header-count 431 on an app.

    The validator calls this for its own app too, so both ports refuse alike.
    """
    app.add_exception_handler(RequestValidationError, _validation_handler)
    app.add_exception_handler(ValidationError, _validation_handler)
    app.add_exception_handler(ClientDisconnect, _client_gone)
    app.add_middleware(bounded_headers)


def create_tool_router(
    registry: EpisodeRegistry,
    ctx: ToolContext,
    *,
    practice: Budgets | None = None,
    limits: Limits | None = None,
) -> APIRouter:
    """Build the tool routes.

    Args:
        registry: the episodes whose tokens may call tools, and their logs.
        ctx: the index and tool set the tools run against.
        practice: budgets of practice episodes; ``None`` turns practice routes off.
        limits: request body caps.
    """
    router = APIRouter()
    limits = limits or Limits()
    # Built once: generating the schemas from the models costs about a millisecond.
    listing = {
        "toolset": ctx.toolset,
        "catalog_version": ctx.index.catalog_version,
        "tools": tool_schemas(ctx.toolset),
    }

    @router.get("/v1/tools")
    async def list_tools() -> dict[str, Any]:
        return listing

    # The hot path: a plain ASGI endpoint, not a FastAPI route (arena.toolcalls says why).
    # Starlette serves an endpoint that is not a function as an ASGI app; its stub names only
    # request handlers, hence the cast.
    endpoint = cast(Any, ToolCallEndpoint(registry, ctx, limits, on_loop=runs_on_loop(ctx)))
    router.add_route("/v1/tools/{name}", endpoint, methods=["POST"], include_in_schema=False)

    if practice is not None:
        _add_practice_routes(router, registry, practice, limits)
    return router


def include_tool_router(app: FastAPI, router: APIRouter) -> None:
    """Include ``create_tool_router``'s routes in ``app``, its tool calls ahead of the app's routing.

    ``tool_calls_first`` goes innermost among the app's middleware (appended, whenever this is
    called), so the header-count 431 and any counter the app adds still see every call.
    """
    app.include_router(router)
    endpoints = (getattr(route, "app", None) for route in router.routes)
    endpoint = next(found for found in endpoints if isinstance(found, ToolCallEndpoint))
    app.user_middleware.append(Middleware(tool_calls_first, endpoint=endpoint))


def _add_practice_routes(
    router: APIRouter, registry: EpisodeRegistry, budgets: Budgets, limits: Limits
) -> None:
    @router.post("/v1/practice/episodes")
    async def open_practice_episode(request: Request) -> dict[str, Any]:
        body = await read_capped_body(request, limits)
        if (key := duplicate_key(body)) is not None:
            raise HTTPException(422, f"the body repeats the key {key[:64]!r}")
        try:
            asked = PracticeRequest.model_validate_json(body) if body.strip() else PracticeRequest()
        except ValidationError as exc:
            raise HTTPException(422, short_validation_message(exc.errors(include_url=False))) from None
        try:
            episode_id, token = registry.open_episode(asked.task_id, PRACTICE_HOTKEY, budgets)
        except EpisodeError as exc:
            raise _episode_http_error(exc) from None
        logger.info("practice_episode episode=%s task=%s", episode_id, asked.task_id)
        return {
            "episode_id": episode_id,
            "token": token,
            "budgets": {"max_calls": budgets.max_calls, "max_seconds": budgets.max_seconds},
        }

    @router.get("/v1/episodes/{episode_id}/log")
    async def episode_log(
        episode_id: str, authorization: str | None = Header(default=None)
    ) -> dict[str, Any]:
        token = _bearer(authorization)
        try:
            entries = registry.log_for_token(token, episode_id)
        except EpisodeError as exc:
            raise _episode_http_error(exc) from None
        return {"episode_id": episode_id, "entries": [e.model_dump(mode="json") for e in entries]}


def create_tool_app(
    ctx: ToolContext,
    *,
    registry: EpisodeRegistry | None = None,
    secret: bytes | None = None,
    practice: Budgets | None = None,
    limits: Limits | None = None,
) -> FastAPI:
    """Build the standalone tool server (what `arena tools serve` runs).

    Args:
        ctx: the index and tool set.
        registry: the episode registry; built from ``secret`` with an in-memory log when omitted.
        secret: the token secret, required when ``registry`` is omitted.
        practice: budgets of practice episodes; ``None`` turns practice mode off.
        limits: request body caps.

    Raises:
        ValueError: neither a registry nor a secret, or an unknown tool set.
    """
    if ctx.toolset not in TOOLSETS:
        raise ValueError(f"unknown tool set {ctx.toolset!r} (known: {', '.join(TOOLSETS)})")
    if registry is None:
        if secret is None:
            raise ValueError("create_tool_app needs a registry or a token secret")
        registry = EpisodeRegistry(EpisodeTokens(secret))
    app = FastAPI(title="Shopping Arena tool server", version=ctx.toolset, docs_url=None, redoc_url=None)
    add_error_handlers(app)
    include_tool_router(app, create_tool_router(registry, ctx, practice=practice, limits=limits))

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {
            "status": "ok",
            "toolset": ctx.toolset,
            "catalog_version": ctx.index.catalog_version,
            "products": len(ctx.index),
            "practice": practice is not None,
        }

    return app


__all__ = [
    "DEFAULT_PRACTICE_BUDGETS",
    "DEFAULT_TOOLSET",
    "Limits",
    "PracticeRequest",
    "ToolCallResponse",
    "add_error_handlers",
    "create_tool_app",
    "create_tool_router",
    "include_tool_router",
    "read_body_within",
    "read_capped_body",
    "refuse_wrong_content_type",
]
