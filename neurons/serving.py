"""Slow-loris bounds for every public port: header and body read time, connections per port, the accept log.

uvicorn bounds the idle time between requests (``timeout_keep_alive``) and the size of a
request head (h11's incomplete-event limit) but not the time a client may take to send it:
a connection that opens and sends nothing, or one header byte a second, is held forever, and
``limit_concurrency`` only answers 503 once a request head has arrived, so 3,000 half-open
sockets fill the process's descriptors and every honest request times out. The protocol made
by :func:`guarded_protocol` (uvicorn's own, httptools or h11, with a watchdog) closes a
connection that has not sent a complete request head within ``header_seconds`` of opening or of
its last response, or whose body is still arriving ``body_seconds`` after its head, and refuses
(closes at once) connections past ``max_connections``. At the descriptor limit the event loop
logs ``socket.accept() out of system resource`` on every retry; :class:`RateLimitedAcceptLog`
lets one such line through per interval, with the count it held back.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol

logger = logging.getLogger(__name__)

_BUSY = b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
_TIMEOUT = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
_ACCEPT_MESSAGE = "socket.accept() out of system resource"


@dataclass(frozen=True)
class ConnectionBounds:
    """How long a client may take to send a request, and how many connections one port holds."""

    header_seconds: float = 10.0
    body_seconds: float = 30.0
    max_connections: int = 1024
    keep_alive_seconds: int = 5
    max_header_bytes: int = 16 * 1024


def guarded_protocol(bounds: ConnectionBounds, base: type[asyncio.Protocol] = AutoHTTPProtocol) -> type:
    """Uvicorn's HTTP protocol class ``base`` with the read-time and connection bounds (``http=``)."""
    tick = min(bounds.header_seconds, bounds.body_seconds) / 4

    class Guarded(base):  # type: ignore[valid-type,misc]
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            if len(self.connections) > bounds.max_connections:
                logger.debug("connection_refused reason=max_connections open=%d", len(self.connections))
                transport.write(_BUSY)
                transport.close()
                return
            self._phase: tuple[object, str] = (None, "head")
            self._since = time.monotonic()
            self._watch = self.loop.call_later(tick, self._check)

        def connection_lost(self, exc: Exception | None) -> None:
            watch = getattr(self, "_watch", None)
            if watch is not None:
                watch.cancel()
            super().connection_lost(exc)

        def _check(self) -> None:
            # Phases: waiting for a request head (at open, or after a response), reading its
            # body, or the app at work (bounded by the app's own deadlines, not here).
            cycle, now = self.cycle, time.monotonic()
            if cycle is None or cycle.response_complete:
                kind, limit = "head", bounds.header_seconds
            elif cycle.more_body:
                kind, limit = "body", bounds.body_seconds
            else:
                kind, limit = "app", float("inf")
            if (cycle, kind) != self._phase:
                self._phase, self._since = (cycle, kind), now
            if now - self._since > limit:
                self._drop(f"{kind}_timeout", answer=kind == "head")
                return
            self._watch = self.loop.call_later(tick, self._check)

        def _drop(self, reason: str, *, answer: bool) -> None:
            logger.debug("connection_dropped reason=%s", reason)
            if answer:  # no response under way: say why before closing
                self.transport.write(_TIMEOUT)
            self.transport.close()

    Guarded.__name__ = Guarded.__qualname__ = f"Guarded{base.__name__}"
    return Guarded


GuardedHTTPProtocol = guarded_protocol(ConnectionBounds())
"""The default-bounded protocol, importable by name (``http="neurons.serving:GuardedHTTPProtocol"``),
so several uvicorn workers, which import their config in a fresh process, get it too."""
GuardedHTTPProtocol.__qualname__ = GuardedHTTPProtocol.__name__ = "GuardedHTTPProtocol"


class RateLimitedAcceptLog(logging.Filter):
    """Lets one ``socket.accept() out of system resource`` record through per ``interval`` seconds."""

    def __init__(self, interval: float = 10.0) -> None:
        super().__init__()
        self.interval = interval
        self._last = -float("inf")
        self._held = 0

    def filter(self, record: logging.LogRecord) -> bool:
        """Pass every other record; this one at most once per interval, with the count held back."""
        if _ACCEPT_MESSAGE not in str(record.msg):
            return True
        now = time.monotonic()
        if now - self._last < self.interval:
            self._held += 1
            return False
        if self._held:
            record.msg = f"{record.msg} ({self._held} more in the last {self.interval:g}s)"
        record.exc_info, record.exc_text = None, None  # the same OSError each time: no traceback
        self._last, self._held = now, 0
        return True


def install_accept_log_limit(interval: float = 10.0) -> None:
    """Rate-limit the event loop's accept-failure line (idempotent)."""
    loop_logger = logging.getLogger("asyncio")
    if not any(isinstance(f, RateLimitedAcceptLog) for f in loop_logger.filters):
        loop_logger.addFilter(RateLimitedAcceptLog(interval))


def uvicorn_options(bounds: ConnectionBounds | None = None) -> dict[str, Any]:
    """The uvicorn ``Config`` options that bound a public port (pass as ``**``; default bounds by name)."""
    protocol: Any = "neurons.serving:GuardedHTTPProtocol" if bounds is None else guarded_protocol(bounds)
    bounds = bounds or ConnectionBounds()
    install_accept_log_limit()
    return {
        "http": protocol,
        "timeout_keep_alive": bounds.keep_alive_seconds,
        "h11_max_incomplete_event_size": bounds.max_header_bytes,
        "backlog": min(2048, bounds.max_connections),
    }
