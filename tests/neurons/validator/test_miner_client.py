"""The validator's miner client against scripted miners: signatures, deadlines, caps, breaker, concurrency."""

from __future__ import annotations

import asyncio
import gzip
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY

from arena.types import Message, Trajectory
from neurons.chain.chaintypes import AuthFailure, Neuron
from neurons.chain.signing import make_nonce_store, sign_request, verify_request
from neurons.chain.wallets import Wallet, create_wallet, hotkey_of
from neurons.errors import DeadlinePassed
from neurons.protocol import (
    HEADER_NONCE,
    PROTOCOL_VERSION,
    TASKS_PATH,
    TaskRequest,
    TaskResponse,
    response_binding,
)
from neurons.validator.miner_client import MinerClient
from neurons.validator.settings import ClientLimits
from tests.neurons.conftest import FakeClock
from tests.neurons.standins import task_request

Handler = Callable[[httpx.Request], httpx.Response]


@pytest.fixture
def validator(wallets_dir: Path) -> Wallet:
    return create_wallet(wallets_dir, "validator")


@pytest.fixture
def miner(wallets_dir: Path) -> Wallet:
    return create_wallet(wallets_dir, "miner1")


@pytest.fixture
def other(wallets_dir: Path) -> Wallet:
    return create_wallet(wallets_dir, "miner2")


def neuron_of(wallet: Wallet, endpoint: str | None = "http://miner.test") -> Neuron:
    return Neuron(
        uid=2,
        hotkey=hotkey_of(wallet),
        coldkey="5Cold",
        stake=0.0,
        validator_permit=False,
        endpoint=endpoint,
        last_update=0,
    )


def answer_body(request: TaskRequest, queried: str, **changes: Any) -> bytes:
    trajectory = Trajectory(
        task_id=changes.pop("task_id", request.task_id),
        episode_id=changes.pop("trajectory_episode_id", request.episode_id),
        miner_hotkey=changes.pop("miner_hotkey", queried),
        messages=(Message(role="user", content=request.query), Message(role="assistant", content="p1")),
    )
    return TaskResponse(
        protocol_version=changes.pop("protocol_version", PROTOCOL_VERSION),
        episode_id=changes.pop("episode_id", request.episode_id),
        trajectory=trajectory,
        stop="terminated",
    ).to_bytes()


def signed(signer: Wallet, sent: httpx.Request, body: bytes, *, nonce: str | None = None) -> dict[str, str]:
    method, path = response_binding(nonce or sent.headers[HEADER_NONCE])
    return sign_request(
        signer, method=method, path=path, body=body, receiver=sent.headers["X-Bittensor-Hotkey"]
    )


def honest_miner(miner: Wallet, **changes: Any) -> Handler:
    """A miner that checks the request was signed for it and answers a signed TaskResponse."""

    def handle(sent: httpx.Request) -> httpx.Response:
        verify_request(
            sent.headers,
            sent.content,
            method="POST",
            path=TASKS_PATH,
            self_hotkey=hotkey_of(miner),
            nonce_store=make_nonce_store(),
        )
        request = TaskRequest.model_validate_json(sent.content)
        body = answer_body(request, hotkey_of(miner), **changes)
        return httpx.Response(200, content=body, headers=signed(miner, sent, body))

    return handle


def client_for(validator: Wallet, handler: Handler, **limits: Any) -> MinerClient:
    return MinerClient(validator, limits=ClientLimits(**limits), transport=httpx.MockTransport(handler))


def failures(kind: str) -> float:
    return REGISTRY.get_sample_value("arena_miner_request_failures_total", {"kind": kind}) or 0.0


# ---------------------------------------------------------------------------- the happy path


async def test_query_returns_the_verified_trajectory(validator: Wallet, miner: Wallet) -> None:
    request = task_request()
    before = REGISTRY.get_sample_value("arena_miner_request_duration_seconds_count") or 0.0
    async with client_for(validator, honest_miner(miner)) as client:
        reply = await client.query(neuron_of(miner), request)

    assert reply.end == "completed", reply.detail
    assert reply.trajectory is not None
    assert reply.trajectory.episode_id == request.episode_id
    assert reply.trajectory.miner_hotkey == hotkey_of(miner)
    assert reply.stop == "terminated" and reply.cause is None and reply.status_code == 200
    assert reply.latency > 0 and reply.response_bytes > 0
    assert REGISTRY.get_sample_value("arena_miner_request_duration_seconds_count") == before + 1


async def test_request_is_signed_for_that_one_miner(validator: Wallet, miner: Wallet, other: Wallet) -> None:
    seen: list[httpx.Request] = []

    def capture(sent: httpx.Request) -> httpx.Response:
        seen.append(sent)
        return honest_miner(miner)(sent)

    async with client_for(validator, capture) as client:
        await client.query(neuron_of(miner), task_request())

    sent = seen[0]
    assert sent.headers["accept-encoding"] == "identity"
    with pytest.raises(AuthFailure) as refused:
        verify_request(
            sent.headers,
            sent.content,
            method="POST",
            path=TASKS_PATH,
            self_hotkey=hotkey_of(other),
            nonce_store=make_nonce_store(),
        )
    assert refused.value.reason == "wrong_receiver"


# ---------------------------------------------------------------------------- deadlines


async def test_trickling_miner_is_cut_off_at_the_deadline(validator: Wallet, miner: Wallet) -> None:
    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
        try:
            for _ in range(60):  # one byte per second: every single read is quick
                writer.write(b" ")
                await writer.drain()
                await asyncio.sleep(1.0)
        except ConnectionError:
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(trickle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    before = failures("timeout")
    try:
        async with MinerClient(validator, limits=ClientLimits(deadline_grace=0.5)) as client:
            started = time.monotonic()
            reply = await client.query(
                neuron_of(miner, f"http://127.0.0.1:{port}"), task_request(seconds=2.0)
            )
            elapsed = time.monotonic() - started
    finally:
        server.close()

    assert (
        reply.end == "timeout" and reply.cause == "timeout" and reply.detail.startswith("no complete answer")
    )
    assert elapsed < 10.0  # the deadline (2 s + 0.5 s grace), not the 60 s the miner would take
    assert failures("timeout") == before + 1


async def test_a_query_whose_deadline_passed_in_the_queue_is_not_sent(
    validator: Wallet, miner: Wallet
) -> None:
    sent: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500)

    async with client_for(validator, handle) as client:
        with pytest.raises(DeadlinePassed):
            await client.query(
                neuron_of(miner), task_request(deadline=datetime.now(UTC) - timedelta(seconds=1))
            )
    assert not sent


# ---------------------------------------------------------------------------- caps


async def test_body_over_the_byte_cap_is_too_large(validator: Wallet, miner: Wallet) -> None:
    big = answer_body(task_request(), hotkey_of(miner)) + b" " * 5000

    def declared(sent: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=big, headers=signed(miner, sent, big))

    def undeclared(sent: httpx.Request) -> httpx.Response:
        chunks = [big[i : i + 512] for i in range(0, len(big), 512)]
        return httpx.Response(200, content=_stream(chunks), headers=signed(miner, sent, big))

    for handler in (declared, undeclared):
        async with client_for(validator, handler) as client:
            reply = await client.query(neuron_of(miner), task_request(max_response_bytes=4096))
        assert reply.end == "too_large" and reply.cause == "too_large", reply.detail


async def test_compressed_answer_is_refused_not_inflated(validator: Wallet, miner: Wallet) -> None:
    bomb = gzip.compress(b" " * 10_000_000)  # ten megabytes of spaces in ~10 KiB
    before = failures("encoding")

    def handle(sent: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, content=bomb, headers={"Content-Encoding": "gzip", **signed(miner, sent, bomb)}
        )

    async with client_for(validator, handle) as client:
        reply = await client.query(neuron_of(miner), task_request())

    assert reply.end == "malformed" and reply.cause == "encoding"
    assert "gzip" in reply.detail
    assert failures("encoding") == before + 1


async def test_deeply_nested_answer_is_refused_before_parsing(validator: Wallet, miner: Wallet) -> None:
    deep = b"[" * 5000 + b"]" * 5000

    def handle(sent: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=deep, headers=signed(miner, sent, deep))

    async with client_for(validator, handle, max_json_depth=32) as client:
        reply = await client.query(neuron_of(miner), task_request())

    assert reply.end == "too_large" and reply.cause == "json_depth"


# ---------------------------------------------------------------------------- signatures and schema


async def test_answer_signed_by_another_hotkey_is_a_bad_signature(
    validator: Wallet, miner: Wallet, other: Wallet
) -> None:
    def handle(sent: httpx.Request) -> httpx.Response:
        body = answer_body(TaskRequest.model_validate_json(sent.content), hotkey_of(miner))
        return httpx.Response(200, content=body, headers=signed(other, sent, body))

    async with client_for(validator, handle) as client:
        reply = await client.query(neuron_of(miner), task_request())
    assert reply.end == "bad_signature" and reply.trajectory is None


@pytest.mark.parametrize("fault", ["unsigned", "tampered", "other_nonce", "crypto_header"])
async def test_answer_not_bound_to_this_request_is_a_bad_signature(
    validator: Wallet, miner: Wallet, fault: str
) -> None:
    def handle(sent: httpx.Request) -> httpx.Response:
        body = answer_body(TaskRequest.model_validate_json(sent.content), hotkey_of(miner))
        headers = signed(miner, sent, body)
        if fault == "unsigned":
            headers = {}
        elif fault == "tampered":
            body = body.replace(b'"p1"', b'"p2"')
        elif fault == "other_nonce":
            headers = signed(miner, sent, body, nonce=str(int(sent.headers[HEADER_NONCE]) + 1))
        elif fault == "crypto_header":
            headers["X-Bittensor-Crypto"] = "ed25519"
        return httpx.Response(200, content=body, headers=headers)

    async with client_for(validator, handle) as client:
        reply = await client.query(neuron_of(miner), task_request())
    assert reply.end == "bad_signature", reply.detail


@pytest.mark.parametrize(
    "change",
    [
        {"episode_id": "ep-other"},
        {"trajectory_episode_id": "ep-other"},
        {"task_id": "t-other"},
        {"miner_hotkey": "5SomeoneElse"},
        {"protocol_version": PROTOCOL_VERSION + 1},
    ],
)
async def test_answer_for_another_episode_is_malformed(
    validator: Wallet, miner: Wallet, change: dict[str, Any]
) -> None:
    async with client_for(validator, honest_miner(miner, **change)) as client:
        reply = await client.query(neuron_of(miner), task_request())
    assert reply.end == "malformed", reply.detail


async def test_signed_garbage_is_malformed(validator: Wallet, miner: Wallet) -> None:
    def handle(sent: httpx.Request) -> httpx.Response:
        body = json.dumps({"protocol_version": 1, "episode_id": "ep-1"}).encode()
        return httpx.Response(200, content=body, headers=signed(miner, sent, body))

    async with client_for(validator, handle) as client:
        reply = await client.query(neuron_of(miner), task_request())
    assert reply.end == "malformed" and "trajectory" in reply.detail


async def test_a_signed_answer_repeating_a_key_is_malformed(validator: Wallet, miner: Wallet) -> None:
    def handle(sent: httpx.Request) -> httpx.Response:
        honest = answer_body(TaskRequest.model_validate_json(sent.content), hotkey_of(miner))
        body = honest[:-1] + b', "stop": "other"}'  # the signature covers it: the miner sent both
        return httpx.Response(200, content=body, headers=signed(miner, sent, body))

    async with client_for(validator, handle) as client:
        reply = await client.query(neuron_of(miner), task_request())
    assert reply.end == "malformed" and "repeats the key 'stop'" in reply.detail


@pytest.mark.parametrize(
    "text",
    [
        b"\\ud800",  # a lone surrogate escape: JSON, but not text
        b"a\\udfffb",
        b"\\udc00\\ud800",  # a pair in the wrong order
        b"\xed\xa0\x80",  # a surrogate encoded in the bytes themselves (CESU-8): not UTF-8
    ],
)
async def test_a_trajectory_with_text_that_cannot_be_encoded_is_malformed(
    validator: Wallet, miner: Wallet, text: bytes
) -> None:
    def handle(sent: httpx.Request) -> httpx.Response:
        request = TaskRequest.model_validate_json(sent.content)
        body = answer_body(request, hotkey_of(miner)).replace(b'"content":"p1"', b'"content":"' + text + b'"')
        assert text in body
        return httpx.Response(200, content=body, headers=signed(miner, sent, body))

    async with client_for(validator, handle) as client:
        reply = await client.query(neuron_of(miner), task_request())
    assert (reply.end, reply.cause, reply.trajectory) == ("malformed", "malformed", None), reply.detail
    reply.detail.encode("utf-8")


# ---------------------------------------------------------------------------- transport faults


async def test_error_status_is_a_miner_error_with_its_reason(validator: Wallet, miner: Wallet) -> None:
    def handle(sent: httpx.Request) -> httpx.Response:
        return httpx.Response(403, json={"reason": "low_stake", "detail": "caller is not admitted"})

    async with client_for(validator, handle) as client:
        reply = await client.query(neuron_of(miner), task_request())
    assert reply.end == "miner_error" and reply.status_code == 403
    assert reply.cause == "http_status" and reply.detail == "403 low_stake"


@pytest.mark.parametrize(
    ("status", "reason"),
    [(403, "no_permit"), (403, "unknown_hotkey"), (401, "stale"), (401, "wrong_receiver")],
)
async def test_a_refusal_naming_our_own_state_is_told_apart_and_never_opens_the_circuit(
    validator: Wallet, miner: Wallet, status: int, reason: str
) -> None:
    def handle(sent: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json={"reason": reason, "detail": "refused"})

    async with client_for(validator, handle, breaker_threshold=1) as client:
        for _ in range(3):
            reply = await client.query(neuron_of(miner), task_request())
            assert reply.cause == "refused_us" and reply.refusal == reason and reply.status_code == status


@pytest.mark.parametrize("reason", ["metagraph_expired", "metagraph_unavailable"])
async def test_a_miner_that_cannot_read_the_chain_is_told_apart_and_never_opens_the_circuit(
    validator: Wallet, miner: Wallet, reason: str
) -> None:
    def handle(sent: httpx.Request) -> httpx.Response:
        return httpx.Response(503, json={"reason": reason, "detail": "the miner's metagraph is old"})

    async with client_for(validator, handle, breaker_threshold=1) as client:
        for _ in range(3):
            reply = await client.query(neuron_of(miner), task_request())
            assert (reply.end, reply.cause, reply.refusal) == ("miner_error", "chain_view", reason)


async def test_refused_connection_is_a_miner_error(validator: Wallet, miner: Wallet) -> None:
    async with MinerClient(validator) as client:
        reply = await client.query(neuron_of(miner, "http://127.0.0.1:9"), task_request())
    assert reply.end == "miner_error" and reply.cause == "connect"


async def test_miner_without_endpoint_is_not_called(validator: Wallet, miner: Wallet) -> None:
    async with client_for(validator, honest_miner(miner)) as client:
        reply = await client.query(neuron_of(miner, None), task_request())
    assert reply.end == "miner_error" and reply.cause == "no_endpoint" and reply.detail == ""


# ---------------------------------------------------------------------------- circuit breaker


async def test_circuit_opens_after_consecutive_failures_and_closes_after_a_good_trial(
    validator: Wallet, miner: Wallet
) -> None:
    clock = FakeClock()
    calls: list[int] = []
    healthy = {"now": False}
    good = honest_miner(miner)

    def handle(sent: httpx.Request) -> httpx.Response:
        calls.append(1)
        return good(sent) if healthy["now"] else httpx.Response(500)

    limits = ClientLimits(breaker_threshold=3, breaker_cooldown=60.0)
    async with MinerClient(
        validator, limits=limits, transport=httpx.MockTransport(handle), clock=clock
    ) as client:
        target = neuron_of(miner)
        ends = [(await client.query(target, task_request())).end for _ in range(3)]
        assert ends == ["miner_error"] * 3 and len(calls) == 3

        skipped = await client.query(target, task_request())
        assert skipped.cause == "circuit_open" and len(calls) == 3  # not sent

        clock.advance(61.0)  # half-open: one trial goes out; it fails and the circuit reopens
        assert (await client.query(target, task_request())).cause == "http_status"
        assert (await client.query(target, task_request())).cause == "circuit_open"
        assert len(calls) == 4

        clock.advance(61.0)
        healthy["now"] = True
        assert (await client.query(target, task_request())).end == "completed"
        assert (await client.query(target, task_request())).end == "completed"  # closed again
        assert len(calls) == 6


# ---------------------------------------------------------------------------- concurrency


async def test_concurrency_is_bounded(validator: Wallet, miner: Wallet) -> None:
    in_flight = 0
    peak = 0
    good = honest_miner(miner)

    async def handle(sent: httpx.Request) -> httpx.Response:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.05)
        in_flight -= 1
        return good(sent)

    async with MinerClient(
        validator, limits=ClientLimits(max_concurrency=2), transport=httpx.MockTransport(handle)
    ) as client:
        replies = await asyncio.gather(*(client.query(neuron_of(miner), task_request()) for _ in range(6)))

    assert [reply.end for reply in replies] == ["completed"] * 6
    assert peak == 2


async def _stream(chunks: list[bytes]) -> Any:
    for chunk in chunks:
        yield chunk
