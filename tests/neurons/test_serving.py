"""Slow-loris bounds on a real uvicorn server on loopback: silent, trickling, slow-body clients, the caps.

Peers are told apart by source address: Linux routes all of 127.0.0.0/8 to the loopback, so a
client bound to 127.0.0.2 is another peer than one on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import logging
import pickle
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI, Request, Response

from neurons import metrics
from neurons.connection_ledger import ConnectionLedger
from neurons.serving import LOG_INTERVAL, RateLimitedAcceptLog, RefusalLog, uvicorn_options
from neurons.settings import ConnectionBounds

# Generous outer bounds: the assertions are "closed at all", never "closed within N ms".
PATIENCE = 20.0


def _app() -> FastAPI:
    app = FastAPI()

    @app.post("/echo")
    async def echo(request: Request) -> dict[str, int]:
        return {"bytes": len(await request.body())}

    @app.get("/ok")
    async def ok() -> dict[str, bool]:
        return {"ok": True}

    @app.post("/small")
    async def small(request: Request) -> Response:
        # As the miner's door does: refused on the declared size, before a byte of the body.
        if int(request.headers.get("content-length", "0")) > 1000:
            return Response(status_code=413)
        return Response(status_code=204)

    return app


Ledger = ConnectionLedger[Any]


@asynccontextmanager
async def served_with_ledger(bounds: ConnectionBounds) -> AsyncIterator[tuple[int, Ledger]]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    options = uvicorn_options(bounds)
    config = uvicorn.Config(_app(), log_config=None, lifespan="off", access_log=False, **options)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield port, options["http"].keywords["ledger"]
    finally:
        server.should_exit = True
        await task
        sock.close()


@asynccontextmanager
async def served(bounds: ConnectionBounds) -> AsyncIterator[int]:
    async with served_with_ledger(bounds) as (port, _):
        yield port


async def until(condition: Callable[[], bool]) -> None:
    """Wait for the server to have booked what the client side already did (accepts run later)."""
    async with asyncio.timeout(PATIENCE):
        while not condition():
            await asyncio.sleep(0.01)


async def _until_closed(reader: asyncio.StreamReader) -> bytes:
    async with asyncio.timeout(PATIENCE):
        return await reader.read()  # to EOF: the server closed the connection


async def _open(port: int, source: str = "127.0.0.1") -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))


async def _get(port: int, source: str = "127.0.0.1") -> bytes:
    reader, writer = await _open(port, source)
    writer.write(b"GET /ok HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
    answer = await _until_closed(reader)
    writer.close()
    return answer


BOUNDS = ConnectionBounds(header_seconds=0.4, body_seconds=0.4, max_connections=3)


async def test_a_silent_or_trickling_client_is_closed_with_a_408() -> None:
    async with served(BOUNDS) as port:
        silent_r, silent_w = await asyncio.open_connection("127.0.0.1", port)
        partial_r, partial_w = await asyncio.open_connection("127.0.0.1", port)
        partial_w.write(b"GET /ok HTTP/1.1\r\nHost: t\r\n")  # the head never ends
        assert (await _until_closed(silent_r)).startswith(b"HTTP/1.1 408")
        assert (await _until_closed(partial_r)).startswith(b"HTTP/1.1 408")
        assert b'{"ok":true}' in await _get(port)
        silent_w.close()
        partial_w.close()


async def test_a_body_that_never_completes_is_cut_off() -> None:
    async with served(BOUNDS) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n0123456789")
        await _until_closed(reader)
        writer.close()
        assert b'{"ok":true}' in await _get(port)


async def test_connections_past_the_cap_are_refused_at_once_and_honest_ones_get_through_later() -> None:
    async with served_with_ledger(BOUNDS) as (port, ledger):
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
        await until(lambda: ledger.total == 3)
        extra_r, extra_w = await asyncio.open_connection("127.0.0.1", port)
        assert (await _until_closed(extra_r)).startswith(b"HTTP/1.1 503")
        for reader, _ in held:  # the silent ones are dropped by the header bound
            await _until_closed(reader)
        assert b'{"ok":true}' in await _get(port)
        for _, writer in held:
            writer.close()
        extra_w.close()


async def test_a_request_head_past_the_size_bound_gets_a_431_though_httptools_has_no_bound() -> None:
    bounds = BOUNDS.model_copy(update={"max_header_bytes": 4096})
    async with served(bounds) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /ok HTTP/1.1\r\nHost: t\r\nX-Big: " + b"a" * 40_000 + b"\r\n\r\n")
        assert (await _until_closed(reader)).startswith(b"HTTP/1.1 431")
        writer.close()
        # A head under the bound with a body over it in the same packets is fine.
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        body = b"x" * 100_000
        writer.write(b"POST /echo HTTP/1.1\r\nHost: t\r\nConnection: close\r\n")
        writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        assert b'{"bytes":100000}' in await _until_closed(reader)
        writer.close()
        # On a kept-alive connection the next head is bounded too, however it is split.
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /ok HTTP/1.1\r\nHost: t\r\n\r\n")
        assert (await reader.readuntil(b'{"ok":true}')).startswith(b"HTTP/1.1 200")
        writer.write(b"GET /ok HTTP/1.1\r\nHost: t\r\n")
        for _ in range(5):  # 5 KiB in pieces, each under the bound; then nothing more is sent
            writer.write(b"X-Part: " + b"b" * 1000 + b"\r\n")
            await writer.drain()
        assert (await _until_closed(reader)).startswith(b"HTTP/1.1 431")
        writer.close()


async def test_the_tail_of_a_body_already_answered_413_is_not_taken_for_an_oversized_head() -> None:
    """Issue 27, item 13: the body still arriving after the app's early 413 was counted as the next
    request's head, so an honest oversized request showed as a ``head_too_large`` slow-loris."""
    bounds = BOUNDS.model_copy(update={"max_header_bytes": 4096})
    before = metrics.HTTP_REFUSED_CONNECTIONS.labels("head_too_large")._value.get()
    async with served(bounds) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /small HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n")
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 413")
        for _ in range(10):  # the body the client had started to send anyway
            writer.write(b"x" * 10_000)
            await writer.drain()
        writer.write(b"GET /ok HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")  # then the next request
        assert b'{"ok":true}' in await _until_closed(reader)
        writer.close()
    assert metrics.HTTP_REFUSED_CONNECTIONS.labels("head_too_large")._value.get() == before


PEER_BOUNDS = ConnectionBounds(max_connections=8, max_connections_per_peer=5, max_pending_per_peer=3)


async def test_one_peers_half_open_sockets_past_its_caps_are_refused_and_another_peer_is_served() -> None:
    async with served_with_ledger(PEER_BOUNDS) as (port, ledger):
        held = [await _open(port, "127.0.0.2") for _ in range(3)]
        await until(lambda: ledger.pending_of("127.0.0.2") == 3)
        refused_r, refused_w = await _open(port, "127.0.0.2")
        assert (await _until_closed(refused_r)).startswith(b"HTTP/1.1 503")
        assert ledger.open_of("127.0.0.2") == 3
        assert b'{"ok":true}' in await _get(port, "127.0.0.1")
        for _, writer in [*held, (refused_r, refused_w)]:
            writer.close()


async def test_a_keep_alive_client_past_its_first_head_is_not_half_open() -> None:
    async with served_with_ledger(PEER_BOUNDS) as (port, ledger):
        reader, writer = await _open(port)
        for _ in range(5):  # one connection, many requests: pending once, open throughout
            writer.write(b"GET /ok HTTP/1.1\r\nHost: t\r\n\r\n")
            assert (await reader.readuntil(b'{"ok":true}')).startswith(b"HTTP/1.1 200")
        assert (ledger.open_of("127.0.0.1"), ledger.pending_of("127.0.0.1")) == (1, 0)
        writer.close()
        await until(lambda: ledger.total == 0)


async def test_at_the_port_cap_a_light_peer_evicts_the_heaviest_loris_and_is_served() -> None:
    async with served_with_ledger(PEER_BOUNDS) as (port, ledger):
        lorises = [await _open(port, f"127.0.0.{2 + i % 3}") for i in range(8)]  # 3, 3, 2 pending
        await until(lambda: ledger.total == 8)
        assert b'{"ok":true}' in await _get(port, "127.0.0.1")
        # One of the two heaviest lost its oldest (a 503, then closed); the rest are still held.
        reads = [asyncio.create_task(reader.read()) for reader, _ in lorises]
        await until(lambda: any(read.done() for read in reads))
        done = [i for i, read in enumerate(reads) if read.done()]
        assert done in ([0], [1]) and reads[done[0]].result().startswith(b"HTTP/1.1 503")
        assert ledger.pending_of("127.0.0.2") + ledger.pending_of("127.0.0.3") == 5
        for read in reads:
            read.cancel()
        assert ledger.total == 7
        for _, writer in lorises:
            writer.close()


async def test_refusals_are_counted_by_reason_and_logged_once_per_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    before = metrics.HTTP_REFUSED_CONNECTIONS.labels("peer_pending")._value.get()
    log = RefusalLog()
    with caplog.at_level(logging.WARNING, logger="neurons.serving"):
        for _ in range(500):
            log.note("peer_pending", "192.0.2.7")
    assert metrics.HTTP_REFUSED_CONNECTIONS.labels("peer_pending")._value.get() == before + 500
    lines = [r.getMessage() for r in caplog.records if "connections_refused" in r.getMessage()]
    assert len(lines) == 1 and "last_peer=192.0.2.7" in lines[0] and LOG_INTERVAL == 10.0


def test_the_options_pickle_for_worker_processes_each_with_empty_books() -> None:
    options = uvicorn_options(PEER_BOUNDS)
    copy = pickle.loads(pickle.dumps(options["http"]))
    assert copy.keywords["bounds"] == PEER_BOUNDS and copy.keywords["ledger"].total == 0
    assert uvicorn_options()["http"].keywords["ledger"] is not options["http"].keywords["ledger"]


def test_the_accept_failure_line_is_rate_limited() -> None:
    limit = RateLimitedAcceptLog(interval=3600)

    def record(msg: str) -> logging.LogRecord:
        return logging.LogRecord(
            "asyncio", logging.ERROR, __file__, 1, msg, None, (OSError, OSError(24), None)
        )

    first = record("socket.accept() out of system resource")
    assert limit.filter(first) and first.exc_info is None
    assert not any(limit.filter(record("socket.accept() out of system resource")) for _ in range(1000))
    assert limit.filter(record("another line"))
