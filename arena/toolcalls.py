"""The tool server's hot path: ``POST /v1/tools/{name}`` as a plain ASGI endpoint, and the body caps.

Every agent tool call goes through :class:`ToolCallEndpoint`, so it is written for what it
costs. As a FastAPI route the call paid more than the search itself for the layers around it
(header dependencies resolved per call, the response model validated, dumped and encoded
again, the token verified twice, the arguments validated twice, anyio's thread hand-off); here
the request head is read once from the ASGI scope, a token the registry minted is known by
its string (no MAC per call), the depth cap counts brackets before it scans, the call runs on
the loop over a catalog where no call can outlast the interpreter's switch interval (else on
the loop's executor), and the answer is encoded once, without a model round trip. The doors
are the ones every route keeps (``arena.httpguard``, ``Limits``), checked in the same order,
with the same statuses and details. ``tool_calls_first`` hands a call to the endpoint ahead of
the app's exception and routing layers, inside its middleware (the header-count 431, the
validator's request counter). See docs/tools.md, Performance.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_json
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send

from arena.episode import EpisodeRegistry
from arena.errors import BudgetExhausted, EpisodeClosed, EpisodeError, TokenExpired, TokenInvalid
from arena.httpguard import bad_call_id, wrong_content_type
from arena.jsondepth import deeper_than
from arena.tools import ToolContext

logger = logging.getLogger(__name__)

MAX_CALL_ID_CHARS = 128
_STATUS = {TokenInvalid: 401, TokenExpired: 401, EpisodeClosed: 403, BudgetExhausted: 429}
_BEARER_CHALLENGE = {"WWW-Authenticate": "Bearer"}
_WANTED = frozenset({b"authorization", b"x-arena-call-id", b"content-type", b"content-length"})
TOOL_CALL_PREFIX = "/v1/tools/"
# Up to this many products no tool call outlasts the interpreter's switch interval (5 ms): the
# slowest find_product measured at 100k (80 common title words, 512 characters) took 3.9 ms of
# CPU, at 1M 53 ms. A worker thread holds the GIL for the whole of a call that short, so the loop
# would wait about as long anyway, and the hand-off to it costs ~0.15 ms of CPU per call (the
# thread hop, and the search's data fetched again into another core's cache). Above it a long
# search runs on the executor, where the loop still gets the GIL every switch interval.
ON_LOOP_MAX_PRODUCTS = 200_000


@dataclass(frozen=True)
class Limits:
    """Caps on request bodies, checked before any JSON parsing."""

    max_body_bytes: int = 64 * 1024
    max_json_depth: int = 8


def runs_on_loop(ctx: ToolContext) -> bool:
    """Whether the tool calls over this context run on the event loop (see ``ON_LOOP_MAX_PRODUCTS``)."""
    return len(ctx.index) <= ON_LOOP_MAX_PRODUCTS


def episode_status(exc: EpisodeError) -> tuple[int, dict[str, str] | None]:
    """The HTTP status of a refused token or budget, and the headers that go with it."""
    status = next((code for kind, code in _STATUS.items() if isinstance(exc, kind)), 403)
    return status, _BEARER_CHALLENGE if status == 401 else None


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None when there is none."""
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


async def receive_body_within(
    receive: Receive, declared_length: str | None, max_bytes: int, *, path: str
) -> bytes | None:
    """Read a request body from ``receive``; None once it (or its declared length) exceeds ``max_bytes``.

    Raises:
        ClientDisconnect: the client went away before the body was complete (logged here, at
            INFO: an ordinary event on a public port, not our fault).
    """
    declared = declared_length or ""
    if declared.isdigit() and int(declared) > max_bytes:
        return None
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":  # http.disconnect
            logger.info("client_disconnected path=%s received_bytes=%d", path[:128], size)
            raise ClientDisconnect()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > max_bytes:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def encode_json(value: Any) -> bytes:
    """JSON bytes as FastAPI's ``JSONResponse`` writes them (compact, UTF-8, no NaN)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")


async def send_json(send: Send, status: int, body: bytes, headers: Mapping[str, str] | None = None) -> None:
    """Send one complete JSON response."""
    raw = [(b"content-length", str(len(body)).encode()), (b"content-type", b"application/json")]
    raw.extend(
        (key.lower().encode("latin-1"), value.encode("latin-1")) for key, value in (headers or {}).items()
    )
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class ToolCallResponse(BaseModel):
    """The result of one tool call; ``content`` goes verbatim into the agent's tool message."""

    call_id: str | None
    tool: str
    content: str
    error: bool
    seq: int


class _Refused(Exception):
    """A request refused at a door: its status, detail and headers (never leaves this module)."""

    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status, self.detail, self.headers = status, detail, headers


@dataclass(frozen=True)
class ToolCallEndpoint:
    """``POST /v1/tools/{name}``: authorize, cap and read the body, run and log the call, answer.

    An ASGI app (a Starlette ``Route`` endpoint that is not a function is called as one). The
    answer is ``ToolCallResponse``'s JSON; refusals are ``{"detail": ...}`` as FastAPI's
    ``HTTPException`` writes them. ``on_loop``: run calls on the event loop, not its executor
    (``runs_on_loop``).
    """

    registry: EpisodeRegistry
    ctx: ToolContext
    limits: Limits
    on_loop: bool = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one tool call."""
        try:
            body = await self._answer(scope, receive)
        except _Refused as refused:
            await send_json(send, refused.status, encode_json({"detail": refused.detail}), refused.headers)
            return
        except ClientDisconnect:  # logged where the body was read; the answer goes nowhere
            await send({"type": "http.response.start", "status": 400, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        await send_json(send, 200, body)

    async def _answer(self, scope: Scope, receive: Receive) -> bytes:
        head: dict[bytes, str] = {}
        for key, value in scope["headers"]:
            if key in _WANTED and key not in head:  # the first of repeated headers, as Starlette reads them
                head[key] = value.decode("latin-1")
        call_id = head.get(b"x-arena-call-id")
        if call_id is not None and len(call_id) > MAX_CALL_ID_CHARS:
            detail = f"header.x-arena-call-id: String should have at most {MAX_CALL_ID_CHARS} characters"
            raise _Refused(422, detail)
        token = bearer_token(head.get(b"authorization"))
        if token is None:
            raise _Refused(401, "missing bearer token", _BEARER_CHALLENGE)
        if call_id is not None and (why := bad_call_id(call_id)) is not None:
            raise _Refused(400, why)
        name: str = scope["path_params"]["name"]
        try:
            claims = self.registry.authorize(token)  # refuse before reading the body
            text = (await self._read_body(scope, receive, head)).decode("utf-8")
            call = functools.partial(
                self.registry.call_authorized, claims, name, text, call_id=call_id, ctx=self.ctx
            )
            if self.on_loop:
                entry = call()
            else:  # the loop's executor: anyio's thread hand-off costs more than a cached search
                entry = await asyncio.get_running_loop().run_in_executor(None, call)
        except EpisodeError as exc:
            status, headers = episode_status(exc)
            raise _Refused(status, str(exc), headers) from None
        except UnicodeDecodeError:
            raise _Refused(422, "request body is not UTF-8") from None
        # ToolCallResponse's JSON, its fields in its order, written by pydantic's own encoder
        # without building the model: every value is ours and typed (a third of the cost).
        answer = {
            "call_id": entry.call_id,
            "tool": name,
            "content": entry.result,
            "error": entry.status == "error",
            "seq": entry.seq,
        }
        return to_json(answer)

    async def _read_body(self, scope: Scope, receive: Receive, head: dict[bytes, str]) -> bytes:
        if (why := wrong_content_type(head.get(b"content-type"))) is not None:
            raise _Refused(415, why)
        limits = self.limits
        body = await receive_body_within(
            receive, head.get(b"content-length"), limits.max_body_bytes, path=scope["path"]
        )
        if body is None:
            raise _Refused(413, f"request body over {limits.max_body_bytes} bytes")
        if deeper_than(body, limits.max_json_depth):
            raise _Refused(413, f"request JSON nested deeper than {limits.max_json_depth} levels")
        return body


def tool_calls_first(app: ASGIApp, endpoint: ToolCallEndpoint) -> ASGIApp:
    """Wrap ``app`` (innermost middleware) so ``POST /v1/tools/{name}`` goes straight to ``endpoint``.

    The same endpoint the router would reach, by the same match (``name`` is one non-empty path
    segment), without the exception middleware, the exit stack and two levels of route matching
    (about 40 µs per call). Anything else, and any app under a ``root_path``, goes to ``app``.
    """

    async def first(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and not scope.get("root_path"):
            path: str = scope["path"]
            name = path[len(TOOL_CALL_PREFIX) :]
            if path.startswith(TOOL_CALL_PREFIX) and name and "/" not in name:
                await endpoint({**scope, "path_params": {"name": name}}, receive, send)
                return
        await app(scope, receive, send)

    return first


__all__ = [
    "MAX_CALL_ID_CHARS",
    "ON_LOOP_MAX_PRODUCTS",
    "TOOL_CALL_PREFIX",
    "Limits",
    "ToolCallEndpoint",
    "ToolCallResponse",
    "bearer_token",
    "encode_json",
    "episode_status",
    "receive_body_within",
    "runs_on_loop",
    "send_json",
    "tool_calls_first",
]
