"""Strict HTTP doors shared by every public app: header count (431), JSON Content-Type (415), call ids.

Each rule is a small function or ASGI wrapper the tool server, the validator and the miner
install alike, so the three ports refuse the same malformed requests the same way. The
connection-level bounds (header and body read time, connections per port) live with the
server that accepts connections (``neurons.serving``); these run once a request has arrived.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

MAX_REQUEST_HEADERS = 64
"""More header lines than this is a 431: our clients send about a dozen (btauth adds six)."""

_JSON_TYPES = frozenset({"application/json"})


def bounded_headers(app: ASGIApp, max_headers: int = MAX_REQUEST_HEADERS) -> ASGIApp:
    """Wrap ``app`` so an HTTP request with more than ``max_headers`` header lines gets a 431.

    Checked before routing, so no handler (and no signature check) ever sees such a request.
    """

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and len(scope["headers"]) > max_headers:
            await _answer(send, 431, f"more than {max_headers} request headers")
            return
        await app(scope, receive, send)

    return guarded


async def _answer(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def wrong_content_type(content_type: str | None) -> str | None:
    """Why a request body with this ``Content-Type`` is refused (415), or None when it may be JSON.

    A body is JSON: a declared type must be ``application/json`` (parameters such as
    ``charset=utf-8`` allowed; the body must be UTF-8 anyway). A missing header is accepted,
    as ``curl --data-binary`` and the SDKs' bare clients send none.
    """
    if content_type is None or not content_type.strip():
        return None
    media = content_type.split(";", 1)[0].strip().lower()
    if media in _JSON_TYPES:
        return None
    return f"Content-Type {content_type[:64]!r} is not application/json"


def bad_call_id(call_id: str) -> str | None:
    """Why an ``X-Arena-Call-Id`` is refused, or None: only printable ASCII goes into the tool log.

    Headers arrive decoded as latin-1, so a C0 control, DEL, or a byte above 0x7f (read as a C1
    control such as CSI) would reach the log and the judge's view of the call; a model's tool
    call ids are short ASCII tokens.
    """
    if all(" " <= char <= "~" for char in call_id):
        return None
    return "X-Arena-Call-Id holds a character that is not printable ASCII"
