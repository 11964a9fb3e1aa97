"""The inference gateway: an OpenAI-compatible endpoint per episode, forwarding to the miner's model, logged.

``POST /v1/inference/chat/completions`` (the base URL ``<tool server>/v1/inference``):

- ``Authorization: Bearer <episode token>`` authorises it, as for the tools;
- ``X-Arena-Upstream: <base URL>`` names the model's OpenAI-compatible endpoint (checked by
  ``arena.upstream``: plain URL, every address it resolves to allowed by the outbound guard);
- ``X-Arena-Upstream-Key: <key>`` (optional) goes on to the upstream as its bearer token; it is
  never stored, logged or echoed.

The request body is forwarded byte for byte to ``<upstream>/chat/completions`` and the
upstream's 2xx answer is served byte for byte. Each exchange, whatever its outcome, is
appended to the episode's ``InferenceLog`` (request and response bytes, status, outcome) before
the answer leaves, so the tool calls of a served completion are on record before the agent can
send them to the tool server (``arena.inference``: attestation).

Bounded: the request's bytes and JSON depth, the answer's bytes, the time the upstream has,
the exchanges per episode, and the upstream requests in flight. Streaming (``"stream": true``)
and more than one choice (``n`` > 1) are refused: a streamed answer is only a completion once
it is whole, and choosing among several samples is a choice the model did not make. Refusals
and upstream failures are the miner's (``refused``, ``upstream_error``); the gateway's own
failures are ours (``gateway_error``: 500 or 503), and an episode with one never scores its
miner (``storage.traces.score_samples``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
from fastapi import APIRouter, Request
from starlette.requests import ClientDisconnect
from starlette.responses import Response

from arena.episode import EpisodeRegistry
from arena.errors import EpisodeError
from arena.httpguard import AddressPolicy, wrong_content_type
from arena.inference import ExchangeOutcome, InferenceExchange, served_calls
from arena.jsondepth import deeper_than
from arena.toolcalls import bearer_token, episode_status, receive_body_within
from arena.upstream import UpstreamProblem, make_client, parse_upstream, post_completion, resolve_guarded

logger = logging.getLogger(__name__)

INFERENCE_PREFIX = "/v1/inference"
COMPLETIONS_PATH = f"{INFERENCE_PREFIX}/chat/completions"
HEADER_UPSTREAM = "X-Arena-Upstream"
HEADER_UPSTREAM_KEY = "X-Arena-Upstream-Key"
ERROR_TYPE = "arena_gateway"


@dataclass(frozen=True)
class GatewayLimits:
    """The gateway's bounds (defaults written here once; the validator's settings pass them on)."""

    max_request_bytes: int = 256 * 1024
    max_response_bytes: int = 128 * 1024
    max_exchanges: int = 64
    upstream_timeout_s: float = 60.0
    max_concurrent: int = 64
    max_json_depth: int = 32

    def __post_init__(self) -> None:
        sizes = (self.max_request_bytes, self.max_response_bytes, self.max_exchanges, self.max_concurrent)
        if min(sizes) < 1 or self.max_json_depth < 4 or not 0 < self.upstream_timeout_s <= 3600:
            raise ValueError(f"gateway limits must be positive: {self}")


class _Refusal(Exception):
    """An answer of the gateway's own, with the outcome it is logged under (never leaves this module)."""

    def __init__(self, code: str, status: int, detail: str, outcome: ExchangeOutcome) -> None:
        super().__init__(detail)
        self.code, self.status, self.detail, self.outcome = code, status, detail, outcome


def _error_body(code: str, detail: str) -> bytes:
    # The OpenAI error shape, so an OpenAI client shows the message and exposes the code.
    return json.dumps({"error": {"message": detail, "type": ERROR_TYPE, "code": code}}).encode("utf-8")


def _answer(status: int, body: bytes, headers: dict[str, str] | None = None) -> Response:
    return Response(content=body, status_code=status, media_type="application/json", headers=headers)


def _text(data: bytes) -> str:
    # A body that is not UTF-8 is logged with its odd bytes escaped (it was refused anyway).
    return data.decode("utf-8", errors="backslashreplace")


@dataclass
class Gateway:
    """The gateway of one episode registry: its limits, outbound policy and HTTP client (``aclose`` it).

    ``client`` is for tests (an ``httpx.AsyncClient`` over a transport of their own).
    """

    registry: EpisodeRegistry
    policy: AddressPolicy
    limits: GatewayLimits = field(default_factory=GatewayLimits)
    client: httpx.AsyncClient = field(default_factory=make_client)
    in_flight: int = field(default=0, init=False)  # upstream requests now (bounded by max_concurrent)

    def router(self) -> APIRouter:
        """The gateway's route, to include in the tool server's app."""
        router = APIRouter()
        router.add_api_route(COMPLETIONS_PATH, self.complete, methods=["POST"], include_in_schema=False)
        return router

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self.client.aclose()

    async def complete(self, request: Request) -> Response:
        """Serve one chat completion for an episode (the module docstring has the rules)."""
        token = bearer_token(request.headers.get("authorization"))
        if token is None:
            body = _error_body("missing_token", "missing bearer token (the episode token)")
            return _answer(401, body, {"WWW-Authenticate": "Bearer"})
        try:
            claims = self.registry.authorize(token)
        except EpisodeError as exc:
            status, headers = episode_status(exc)
            return _answer(status, _error_body("episode_token", str(exc)), headers)
        episode_id = claims.episode_id
        seq = self.registry.inference.reserve(episode_id, self.limits.max_exchanges)
        if seq is None:  # not logged: the budget bounds what an episode can make us store
            detail = f"inference budget spent ({self.limits.max_exchanges} requests per episode)"
            return _answer(429, _error_body("budget_exhausted", detail))
        started = datetime.now(UTC)
        named = (request.headers.get(HEADER_UPSTREAM) or "")[:2048]
        key = request.headers.get(HEADER_UPSTREAM_KEY) or None
        received = b""
        outcome: ExchangeOutcome = "ok"
        status = 200
        try:
            received = await self._read(request)
            data = await self._forward(request, received, key)
        except _Refusal as refusal:
            status, outcome = refusal.status, refusal.outcome
            data = _error_body(refusal.code, refusal.detail)
        except UpstreamProblem as problem:
            status, outcome = problem.status, "refused" if problem.status < 500 else "upstream_error"
            detail = f"{problem.detail}: {_text(problem.body)[:300]}" if problem.body else problem.detail
            data = _error_body(problem.code, _scrubbed(detail, key))
        except ClientDisconnect:
            raise  # logged where the body was read; the answer goes nowhere, so nothing is recorded
        except Exception:  # noqa: BLE001 - our own fault, whatever it is: a 500, never the miner's
            logger.exception("gateway_failed episode=%s seq=%d", episode_id, seq)
            status, outcome = 500, "gateway_error"
            data = _error_body(
                "gateway_error", "the validator's gateway failed; this is not held against you"
            )
        self._record(episode_id, seq, named, received, data, status, outcome, started, key)
        return _answer(status, data)

    def _record(
        self,
        episode_id: str,
        seq: int,
        upstream: str,
        request: bytes,
        response: bytes,
        status: int,
        outcome: ExchangeOutcome,
        started: datetime,
        key: str | None,
    ) -> None:
        exchange = InferenceExchange(
            episode_id=episode_id,
            seq=seq,
            upstream=_logged_upstream(upstream),
            request=_scrubbed(_text(request), key),
            response=_scrubbed(_text(response), key),
            tool_calls=len(served_calls(_text(response))) if outcome == "ok" else 0,
            status=status,
            outcome=outcome,
            started_at=started,
            finished_at=datetime.now(UTC),
        )
        self.registry.inference.append(exchange)
        logger.debug(
            "gateway_exchange episode=%s seq=%d status=%d outcome=%s", episode_id, seq, status, outcome
        )

    async def _read(self, request: Request) -> bytes:
        if (why := wrong_content_type(request.headers.get("content-type"))) is not None:
            raise _Refusal("not_json", 415, why, "refused")
        limit = self.limits.max_request_bytes
        body = await receive_body_within(
            request.receive, request.headers.get("content-length"), limit, path=request.url.path
        )
        if body is None:
            raise _Refusal("request_too_large", 413, f"request body over {limit} bytes", "refused")
        return body

    async def _forward(self, request: Request, body: bytes, key: str | None) -> bytes:
        _check_request(body, self.limits.max_json_depth)
        named = request.headers.get(HEADER_UPSTREAM)
        if not named:
            raise _Refusal(
                "upstream_missing", 400, f"name the model's endpoint in {HEADER_UPSTREAM}", "refused"
            )
        upstream = parse_upstream(named)
        address = await resolve_guarded(upstream, self.policy)
        if self.in_flight >= self.limits.max_concurrent:
            detail = "the validator's gateway is at capacity; this is not held against you"
            raise _Refusal("gateway_busy", 503, detail, "gateway_error")
        self.in_flight += 1
        try:
            data = await post_completion(
                self.client,
                upstream,
                address,
                body,
                key=key,
                max_response_bytes=self.limits.max_response_bytes,
                timeout_s=self.limits.upstream_timeout_s,
            )
        finally:
            self.in_flight -= 1
        if not _json_object(data):
            raise UpstreamProblem("upstream_not_json", 502, "the upstream's answer is not a JSON object")
        return data


def _check_request(body: bytes, max_depth: int) -> None:
    """Refuse a body that is not a JSON object, or asks for a stream or several choices."""
    if deeper_than(body, max_depth):
        raise _Refusal(
            "request_too_deep", 413, f"request JSON nested deeper than {max_depth} levels", "refused"
        )
    try:
        value: Any = json.loads(body)
    except (ValueError, RecursionError):
        raise _Refusal("not_json", 400, "the request body is not JSON (UTF-8)", "refused") from None
    if not isinstance(value, dict):
        raise _Refusal("not_json", 400, "the request body is not a JSON object", "refused")
    if value.get("stream"):
        detail = "streaming is not supported: ask for the whole completion (stream false)"
        raise _Refusal("stream_unsupported", 400, detail, "refused")
    if value.get("n", 1) != 1:
        raise _Refusal("n_unsupported", 400, "one choice per request (n = 1)", "refused")


def _json_object(data: bytes) -> bool:
    try:
        return isinstance(json.loads(data), dict)
    except (ValueError, RecursionError):
        return False


def _scrubbed(text: str, key: str | None) -> str:
    """``text`` with the miner's key cut out wherever it appears (an upstream may echo it in an error)."""
    return text.replace(key, "[upstream key]") if key and len(key) >= 4 else text


def _logged_upstream(named: str) -> str:
    """The upstream as logged: parsed where it parses (never credentials or a query), else cut short."""
    try:
        return parse_upstream(named).named
    except UpstreamProblem:
        return named.split("?", 1)[0].split("#", 1)[0].rpartition("@")[2][:256]


__all__ = [
    "COMPLETIONS_PATH",
    "ERROR_TYPE",
    "HEADER_UPSTREAM",
    "HEADER_UPSTREAM_KEY",
    "INFERENCE_PREFIX",
    "Gateway",
    "GatewayLimits",
]
