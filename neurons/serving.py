"""Slow-loris bounds for every public port: read times, connections in all and per peer, the logs.

uvicorn bounds the idle time between requests (``timeout_keep_alive``) but not the size of a
request head on httptools (h11 caps it; httptools, the C parser we serve with for its lower CPU
per request, does not) nor the time a client may take to send it:
a connection that opens and sends nothing, or one header byte a second, is held forever, and
``limit_concurrency`` only answers 503 once a request head has arrived, so 3,000 half-open
sockets fill the process's descriptors and every honest request times out. The protocol that
:func:`uvicorn_options` hands uvicorn (its httptools protocol, with a guard) bounds the head
at ``max_header_bytes`` itself (a 431) and books every
connection in the server's :class:`~neurons.connection_ledger.ConnectionLedger` at accept time
and closes it at once, before the parser sees a byte, when its peer (source address) holds too
many connections or too many still sending their first head, or when the port is full and no
heavier half-open peer can yield one (``ConnectionBounds``); a watchdog closes a connection that
has not sent a complete request head within ``header_seconds`` of opening or of its last
response, or whose body is still arriving ``body_seconds`` after its head. Each refusal is
counted in ``arena_http_refused_connections_total{reason}`` and logged at most once per
``LOG_INTERVAL`` with the counts held back; ``arena_http_open_connections_size`` is the process's
port's open count. At the descriptor limit the event loop logs ``socket.accept() out of system
resource`` on every retry; :class:`RateLimitedAcceptLog` lets one such line through per
interval, with the count it held back.
"""

from __future__ import annotations

import functools
import logging
import time
from collections import Counter
from typing import Any, Literal, get_args

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from neurons import metrics
from neurons.connection_ledger import ConnectionLedger, peer_of
from neurons.settings import ConnectionBounds

logger = logging.getLogger(__name__)

_BUSY = b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
_TIMEOUT = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
_TOO_LARGE = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
_ACCEPT_MESSAGE = "socket.accept() out of system resource"
LOG_INTERVAL = 10.0
CutOff = Literal[
    "peer_pending",
    "peer_connections",
    "max_connections",
    "evicted",
    "head_timeout",
    "body_timeout",
    "head_too_large",
]
CUT_OFF_REASONS: tuple[CutOff, ...] = get_args(CutOff)


class RefusalLog:
    """One ``connections_refused`` line per ``interval`` seconds, with the counts by reason since the last."""

    def __init__(self, interval: float = LOG_INTERVAL) -> None:
        self.interval = interval
        self._last = -float("inf")
        self._held: Counter[str] = Counter()

    def note(self, reason: CutOff, peer: str | None) -> None:
        """Count a refusal in the metric; log it, with those held back, if the interval has passed."""
        metrics.HTTP_REFUSED_CONNECTIONS.labels(reason).inc()
        self._held[reason] += 1
        now = time.monotonic()
        if now - self._last < self.interval:
            return
        counts = " ".join(f"{name}={count}" for name, count in sorted(self._held.items()))
        logger.warning(
            "connections_refused last_reason=%s last_peer=%s %s in_last_s=%g",
            reason,
            peer,
            counts,
            min(now - self._last, self.interval),
        )
        self._last = now
        self._held.clear()


class GuardedHTTPProtocol(HttpToolsProtocol):
    """uvicorn's HTTP protocol with the bounds of one server (built by :func:`uvicorn_options` only)."""

    def __init__(
        self,
        *args: Any,
        bounds: ConnectionBounds,
        ledger: ConnectionLedger[GuardedHTTPProtocol],
        refusals: RefusalLog,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._bounds, self._ledger, self._refusals = bounds, ledger, refusals
        self._admitted = False
        self._peer: str | None = None
        self._head_bytes = 0  # of the request head under way
        # The parser finished the last request's message (head and body): what comes next is a
        # head. Not so while the tail of a body the app answered early (a 413) still arrives.
        self._message_done = True

    def connection_made(self, transport: Any) -> None:
        """Book the connection, or refuse it (a 503, closed) before anything is read."""
        self._peer = peer_of(transport.get_extra_info("peername"))
        admission = self._ledger.admit(self, self._peer)
        if admission.refused is not None:
            # Before uvicorn's own set-up and before a byte is read: a refusal costs one write.
            self._refusals.note(admission.refused, self._peer)
            transport.write(_BUSY)
            transport.close()
            return
        if admission.evicted is not None:
            self._refusals.note("evicted", admission.evicted._peer)
            admission.evicted._close(_BUSY)
        self._admitted = True
        metrics.HTTP_OPEN_CONNECTIONS.set(self._ledger.total)
        super().connection_made(transport)
        self._phase: tuple[object, str] = (None, "head")
        self._since = time.monotonic()
        self._watch = self.loop.call_later(self._tick(), self._check)

    def _awaiting_head(self) -> bool:
        return self.cycle is None or (self.cycle.response_complete and self._message_done)

    def on_message_begin(self) -> None:
        """A request's message starts (uvicorn's callback): its body is not done yet."""
        self._message_done = False
        super().on_message_begin()

    def on_message_complete(self) -> None:
        """The parser read a request's whole body, including one the app answered before reading it."""
        self._message_done = True
        super().on_message_complete()

    def data_received(self, data: bytes) -> None:
        """Parse as uvicorn does; the head is bounded here, and its end ends the half-open phase."""
        if not self._admitted:
            return
        if self._awaiting_head():
            # Bounded here, not by the parser: httptools does not cap a head (h11 did).
            end = data.find(b"\r\n\r\n")
            self._head_bytes += len(data) if end < 0 else end + 4
            if self._head_bytes > self._bounds.max_header_bytes:
                self._refusals.note("head_too_large", self._peer)
                self._close(_TOO_LARGE)
                return
        super().data_received(data)
        if self.cycle is not None and not self.cycle.response_complete:  # a complete head arrived
            self._ledger.heard(self)  # no longer half-open
            self._head_bytes = 0

    def connection_lost(self, exc: Exception | None) -> None:
        """Off the books, and uvicorn's own clean-up for an admitted connection."""
        self._ledger.release(self)
        if not self._admitted:
            return
        metrics.HTTP_OPEN_CONNECTIONS.set(self._ledger.total)
        self._watch.cancel()
        super().connection_lost(exc)

    def _tick(self) -> float:
        return min(self._bounds.header_seconds, self._bounds.body_seconds) / 4

    def _check(self) -> None:
        # Phases: waiting for a request head (at open, or after a response), reading its
        # body, or the app at work (bounded by the app's own deadlines, not here).
        cycle, now = self.cycle, time.monotonic()
        if self._awaiting_head():
            kind, limit = "head", self._bounds.header_seconds
        elif cycle is not None and (cycle.more_body or not self._message_done):
            kind, limit = "body", self._bounds.body_seconds
        else:
            kind, limit = "app", float("inf")
        if (cycle, kind) != self._phase:
            self._phase, self._since = (cycle, kind), now
        if now - self._since > limit:
            self._refusals.note("head_timeout" if kind == "head" else "body_timeout", self._peer)
            self._close(_TIMEOUT if kind == "head" else None)  # no response under way: say why
            return
        self._watch = self.loop.call_later(self._tick(), self._check)

    def _close(self, answer: bytes | None) -> None:
        self._ledger.release(self)
        if answer is not None:
            self.transport.write(answer)
        self.transport.close()


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
    """The uvicorn ``Config`` options that bound one public port (pass as ``**``, once per server).

    The protocol comes with a fresh ledger: every server that takes these options shares it, so
    build them per port. They pickle (uvicorn's worker processes each get their own empty ledger).
    """
    bounds = bounds or ConnectionBounds()
    install_accept_log_limit()
    protocol = functools.partial(
        GuardedHTTPProtocol, bounds=bounds, ledger=ConnectionLedger(bounds), refusals=RefusalLog()
    )
    return {
        "http": protocol,
        "timeout_keep_alive": bounds.keep_alive_seconds,
        "backlog": min(2048, bounds.max_connections),
    }
