"""The validator's client for miners: signed TaskRequests, hard deadlines, size/depth caps, signed answers.

One ``MinerClient`` per validator process wraps one long-lived ``httpx.AsyncClient``. Every miner
fault (timeout, refused connection, error status, oversized, compressed, deep or malformed body,
bad response signature, open circuit) comes back as data: a ``MinerReply`` whose ``end`` says
how the episode ended, ``cause`` which failure it was, and ``detail`` what was seen.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import httpx
from pydantic import ValidationError

from arena.jsondepth import JsonDepthGuard, json_depth
from arena.jsonkeys import duplicate_key
from arena.types import EpisodeEnd, Trajectory
from neurons import metrics
from neurons.chain.chaintypes import AuthFailure, Neuron
from neurons.chain.signing import make_nonce_store, sign_request, verify_request
from neurons.chain.wallets import Wallet, hotkey_of
from neurons.errors import DeadlinePassed
from neurons.protocol import (
    HEADER_NONCE,
    PROTOCOL_VERSION,
    TASKS_PATH,
    TaskRequest,
    TaskResponse,
    response_binding,
)
from neurons.validator.breaker import CircuitBreaker
from neurons.validator.settings import ClientLimits

logger = logging.getLogger(__name__)

_ERROR_BODY_BYTES = 4096  # how much of a non-200 answer is read for its reason

# Which failure ended a query (the ``arena_miner_request_failures_total`` label); ``end`` groups them.
FailureCause = Literal[
    "no_endpoint",  # miner_error: the miner serves no axon
    "circuit_open",  # miner_error: its breaker is open after repeated failures
    "connect",  # miner_error: the connection was refused or failed
    "transport",  # miner_error: another HTTP transport error
    "http_status",  # miner_error: an answer other than 200
    "refused_us",  # miner_error until the round decides: a refusal naming our own state (OUR_FAULT_REASONS)
    "chain_view",  # miner_error until the round decides: the miner cannot read the chain (CHAIN_VIEW_REASONS)
    "timeout",  # timeout: no complete answer by the hard deadline
    "encoding",  # malformed: a compressed body (never inflated)
    "malformed",  # malformed: not a valid TaskResponse, or not the one asked for
    "too_large",  # too_large: over the byte cap
    "json_depth",  # too_large: nested deeper than the depth cap
    "bad_signature",  # bad_signature: the response signature does not verify
]


OUR_FAULT_REASONS = frozenset({"no_permit", "unknown_hotkey", "stale", "wrong_receiver"})
"""Refusal reasons that name the validator's own state: its registration, permit, clock, or the
hotkey it signed for. Such a reply is never a miner zero by itself (``neurons.validator.rounds``)."""
CHAIN_VIEW_REASONS = frozenset({"metagraph_expired", "metagraph_unavailable"})
"""Refusal reasons that name the miner's view of the chain (503: no metagraph younger than its
``metagraph_max_age``): an outage of the chain endpoint miners share reads so from every miner,
so such a reply is never a miner zero by itself either (``neurons.validator.rounds``)."""
HELD_CAUSES: frozenset[FailureCause] = frozenset({"refused_us", "chain_view"})
"""Failures the round holds, unjudged, until it decides whose fault they are."""


@dataclass(frozen=True)
class MinerReply:
    """The outcome of one query: a verified trajectory (``end="completed"``) or why there is none.

    Attributes:
        hotkey: the miner queried.
        uid: its uid in the snapshot the caller used.
        end: how the episode ended (``arena.types.EpisodeEnd``).
        trajectory: the verified trajectory when ``end == "completed"``, else None.
        latency: seconds from sending to the end of the exchange (0 when nothing was sent).
        cause: None on success; otherwise which failure it was.
        detail: a short message about the failure (free text, never parsed); empty on success.
        status_code: the miner's HTTP status when one arrived.
        response_bytes: body bytes read.
        stop: the agent's own stop reason (informational).
        refusal: the miner's refusal reason code on a non-200 answer, when it sent one.
    """

    hotkey: str
    uid: int
    end: EpisodeEnd
    trajectory: Trajectory | None
    latency: float
    cause: FailureCause | None = None
    detail: str = ""
    status_code: int | None = None
    response_bytes: int = 0
    stop: str | None = None
    refusal: str | None = None


class _Failure(Exception):
    """An exchange ended as a miner fault; carries what the reply needs."""

    def __init__(
        self,
        end: EpisodeEnd,
        cause: FailureCause,
        message: str = "",
        *,
        status: int | None = None,
        refusal: str | None = None,
    ) -> None:
        super().__init__(cause)
        self.end, self.cause, self.message, self.status = end, cause, message, status
        self.refusal = refusal


class MinerClient:
    """Queries miners over signed HTTP; one per validator process (``async with`` or ``aclose()``)."""

    def __init__(
        self,
        wallet: Wallet,
        *,
        limits: ClientLimits | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Build the client.

        Args:
            wallet: the validator's wallet; its hotkey signs every request.
            limits: call bounds; defaults to ``ClientLimits()``.
            transport: an httpx transport (tests); the default opens real connections.
            clock: monotonic time source for latency and the circuit breaker.
        """
        self.limits = limits or ClientLimits()
        self.hotkey = hotkey_of(wallet)
        self._wallet = wallet
        self._clock = clock
        self._slots = asyncio.Semaphore(self.limits.max_concurrency)
        self.breaker = CircuitBreaker(
            threshold=self.limits.breaker_threshold, cooldown=self.limits.breaker_cooldown, clock=clock
        )
        # Responses are bound to a request nonce already; the store refuses a response seen twice.
        self._response_nonces = make_nonce_store(retention=self.limits.response_max_age + 5.0)
        self._http = httpx.AsyncClient(
            transport=transport,
            timeout=httpx.Timeout(self.limits.connect_timeout, read=None),
            limits=httpx.Limits(
                max_connections=self.limits.max_concurrency,
                max_keepalive_connections=self.limits.max_concurrency,
            ),
            headers={"Accept-Encoding": "identity", "User-Agent": f"shopping-arena/{PROTOCOL_VERSION}"},
            follow_redirects=False,  # a redirect would leave the miner the signature was bound to
            trust_env=False,
        )

    async def __aenter__(self) -> MinerClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def query(self, neuron: Neuron, request: TaskRequest) -> MinerReply:
        """Send ``request`` to ``neuron`` and return its verified answer or the reason there is none.

        The whole exchange (waiting for nothing but the network: connect, send, read every byte)
        runs under one hard deadline, ``request.deadline`` plus ``deadline_grace``, so a miner
        trickling bytes cannot hold the call open.

        Raises:
            DeadlinePassed: the deadline passed while the query waited for a connection slot
                (validator overload; nothing was sent and the miner is not at fault).
        """
        if neuron.endpoint is None:
            return self._finish(neuron, _Failure("miner_error", "no_endpoint"), 0.0)
        if not self.breaker.allow(neuron.hotkey):
            return self._finish(neuron, _Failure("miner_error", "circuit_open"), 0.0)
        outcome: MinerReply | _Failure | None = None
        start = self._clock()
        try:
            async with self._slots:
                budget = request.seconds_left() + self.limits.deadline_grace
                if request.seconds_left() <= 0:
                    raise DeadlinePassed(f"deadline of episode {request.episode_id} passed before sending")
                start = self._clock()
                try:
                    async with asyncio.timeout(budget):
                        outcome = await self._exchange(neuron, request, budget)
                except TimeoutError:
                    outcome = _Failure("timeout", "timeout", f"no complete answer within {budget:.1f}s")
        finally:
            if outcome is None or (isinstance(outcome, _Failure) and outcome.cause in HELD_CAUSES):
                # Neither our overload, nor our state, nor a chain outage is held against it here.
                self.breaker.abandon(neuron.hotkey)
        latency = self._clock() - start
        metrics.MINER_REQUEST_DURATION.observe(latency)
        if isinstance(outcome, MinerReply):
            self.breaker.record(neuron.hotkey, success=True)
            reply = dataclasses.replace(outcome, latency=latency)
            logger.debug("miner_query uid=%d end=completed latency=%.3f", neuron.uid, latency)
            return reply
        if outcome.cause not in HELD_CAUSES:
            self.breaker.record(neuron.hotkey, success=False)
        return self._finish(neuron, outcome, latency)

    def _finish(self, neuron: Neuron, failure: _Failure, latency: float) -> MinerReply:
        metrics.MINER_REQUEST_FAILURES.labels(failure.cause).inc()
        logger.debug(
            "miner_query uid=%d end=%s cause=%s detail=%s",
            neuron.uid,
            failure.end,
            failure.cause,
            failure.message[:200],
        )
        return MinerReply(
            hotkey=neuron.hotkey,
            uid=neuron.uid,
            end=failure.end,
            trajectory=None,
            latency=latency,
            cause=failure.cause,
            detail=failure.message,
            status_code=failure.status,
            refusal=failure.refusal,
        )

    async def _exchange(self, neuron: Neuron, request: TaskRequest, budget: float) -> MinerReply | _Failure:
        body = request.to_bytes()
        headers = sign_request(
            self._wallet, method="POST", path=TASKS_PATH, body=body, receiver=neuron.hotkey
        )
        headers["Content-Type"] = "application/json"
        url = f"{(neuron.endpoint or '').rstrip('/')}{TASKS_PATH}"
        timeout = httpx.Timeout(budget, connect=min(self.limits.connect_timeout, budget))
        try:
            async with self._http.stream(
                "POST", url, content=body, headers=headers, timeout=timeout
            ) as answer:
                raw = await self._read(answer, request.budgets.max_response_bytes)
                answer_headers = answer.headers
        except _Failure as failure:
            return failure
        except httpx.TimeoutException:
            return _Failure("timeout", "timeout", "transport timeout")
        except httpx.ConnectError as exc:
            return _Failure("miner_error", "connect", type(exc).__name__)
        except httpx.HTTPError as exc:
            return _Failure("miner_error", "transport", type(exc).__name__)
        return self._verify(neuron, request, headers, answer_headers, raw)

    async def _read(self, answer: httpx.Response, max_bytes: int) -> bytes:
        if answer.status_code != 200:
            reason = await _refusal_reason(answer)
            cause: FailureCause = "http_status"
            if reason in OUR_FAULT_REASONS:
                cause = "refused_us"
            elif reason in CHAIN_VIEW_REASONS:
                cause = "chain_view"
            detail = f"{answer.status_code} {reason or ''}".strip()
            raise _Failure("miner_error", cause, detail, status=answer.status_code, refusal=reason)
        encoding = answer.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            # Never inflate a miner's compressed body: a few KiB of gzip can decode to gigabytes.
            raise _Failure("malformed", "encoding", f"content-encoding {encoding[:32]!r} refused", status=200)
        declared = answer.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise _Failure("too_large", "too_large", f"declared {declared} bytes > {max_bytes}", status=200)
        guard = JsonDepthGuard(self.limits.max_json_depth)
        chunks: list[bytes] = []
        size = 0
        async for chunk in answer.aiter_bytes():  # decoded bytes (identity only: nothing is inflated)
            size += len(chunk)
            if size > max_bytes:
                raise _Failure("too_large", "too_large", f"body over {max_bytes} bytes", status=200)
            if not guard.feed(chunk):
                raise _Failure("too_large", "json_depth", f"nested deeper than {guard.max_depth}", status=200)
            chunks.append(chunk)
        return b"".join(chunks)

    def _verify(
        self,
        neuron: Neuron,
        request: TaskRequest,
        sent: dict[str, str],
        headers: httpx.Headers,
        body: bytes,
    ) -> MinerReply | _Failure:
        method, path = response_binding(sent[HEADER_NONCE])
        try:
            verify_request(
                headers,
                body,
                method=method,
                path=path,
                self_hotkey=self.hotkey,
                nonce_store=self._response_nonces,
                max_age=self.limits.response_max_age,
                admit=lambda signer: None if signer == neuron.hotkey else "unknown_hotkey",
            )
        except AuthFailure as exc:
            return _Failure("bad_signature", "bad_signature", exc.reason, status=200)
        if (key := duplicate_key(body)) is not None:  # the parser would keep the last one silently
            return _Failure("malformed", "malformed", f"the body repeats the key {key[:64]!r}", status=200)
        try:
            response = TaskResponse.model_validate_json(body)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(part) for part in first["loc"])
            return _Failure("malformed", "malformed", f"{where}: {first['msg']}"[:200], status=200)
        mismatch = _mismatch(neuron, request, response)
        if mismatch:
            return _Failure("malformed", "malformed", mismatch, status=200)
        return MinerReply(
            hotkey=neuron.hotkey,
            uid=neuron.uid,
            end="completed",
            trajectory=response.trajectory,
            latency=0.0,
            status_code=200,
            response_bytes=len(body),
            stop=response.stop,
        )


def _mismatch(neuron: Neuron, request: TaskRequest, response: TaskResponse) -> str:
    trajectory = response.trajectory
    if response.protocol_version != PROTOCOL_VERSION:
        return f"protocol_version {response.protocol_version} != {PROTOCOL_VERSION}"
    if response.episode_id != request.episode_id or trajectory.episode_id != request.episode_id:
        return "episode_id does not match the request"
    if trajectory.task_id != request.task_id:
        return "task_id does not match the request"
    if trajectory.miner_hotkey != neuron.hotkey:
        return "miner_hotkey is not the queried miner"
    return ""


async def _refusal_reason(answer: httpx.Response) -> str | None:
    """The refusal reason code of a non-200 answer, when the miner sent a short JSON one."""
    head = b""
    async for chunk in answer.aiter_bytes():
        head += chunk
        if len(head) >= _ERROR_BODY_BYTES:
            break
    head, reason = head[:_ERROR_BODY_BYTES], None
    if json_depth(head) <= 2:  # the parser never sees a deep document
        try:
            payload = json.loads(head)
        except ValueError:
            payload = None
        if isinstance(payload, dict) and isinstance(payload.get("reason"), str):
            reason = payload["reason"][:64] or None
    return reason
