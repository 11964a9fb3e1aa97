"""Slow-loris bounds on a real uvicorn server on loopback: silent, trickling, slow-body clients, the cap."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn
from fastapi import FastAPI, Request

from neurons.serving import ConnectionBounds, RateLimitedAcceptLog, uvicorn_options

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

    return app


@asynccontextmanager
async def served(bounds: ConnectionBounds) -> AsyncIterator[int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        _app(), log_config=None, lifespan="off", access_log=False, **uvicorn_options(bounds)
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        await task
        sock.close()


async def _until_closed(reader: asyncio.StreamReader) -> bytes:
    async with asyncio.timeout(PATIENCE):
        return await reader.read()  # to EOF: the server closed the connection


async def _get(port: int) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
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
    async with served(BOUNDS) as port:
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
        await asyncio.sleep(0)
        extra_r, extra_w = await asyncio.open_connection("127.0.0.1", port)
        assert (await _until_closed(extra_r)).startswith(b"HTTP/1.1 503")
        for reader, _ in held:  # the silent ones are dropped by the header bound
            await _until_closed(reader)
        assert b'{"ok":true}' in await _get(port)
        for _, writer in held:
            writer.close()
        extra_w.close()


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
