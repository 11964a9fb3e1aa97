"""Episode tokens (forgery, expiry), closed episodes, budgets, and the tool log."""

from __future__ import annotations

import base64
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest

from arena.episode import Budgets, EpisodeRegistry, EpisodeTokens, InMemoryToolLog, TokenClaims
from arena.errors import BudgetExhausted, EpisodeClosed, EpisodeError, TokenExpired, TokenInvalid
from arena.index import SearchIndex
from arena.tools import ToolContext
from arena.types import ToolLogEntry, result_hash

SECRET = b"k" * 32


class Clock:
    """A settable unix clock, so expiry and wall-time budgets are tested without sleeping."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def registry(clock: Clock) -> EpisodeRegistry:
    return EpisodeRegistry(EpisodeTokens(SECRET), clock=clock, token_grace_s=60)


@pytest.fixture
def ctx(fixture_index: SearchIndex) -> ToolContext:
    return ToolContext(index=fixture_index)


CLAIMS = TokenClaims(episode_id="ep-1", miner_hotkey="5Hotkey", task_id="t-1", expires_at=2_000_000_000)


def _swap_payload(token: str, **changes: object) -> str:
    version, payload, mac = token.split(".")
    body = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    body.update(changes)
    forged = base64.urlsafe_b64encode(json.dumps(body).encode()).rstrip(b"=").decode()
    return f"{version}.{forged}.{mac}"


# --------------------------------------------------------------------------- tokens


def test_token_round_trips_its_claims() -> None:
    tokens = EpisodeTokens(SECRET)
    assert tokens.verify(tokens.mint(CLAIMS), now=1_900_000_000) == CLAIMS


def test_token_is_refused_when_forged() -> None:
    tokens = EpisodeTokens(SECRET)
    token = tokens.mint(CLAIMS)
    other = EpisodeTokens(b"x" * 32).mint(CLAIMS)
    flipped_mac = token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1]
    forged = [
        other,
        flipped_mac,
        _swap_payload(token, h="5Attacker"),
        _swap_payload(token, x=2_100_000_000),
        "",
        "garbage",
        "at1.e30.AAAA",
        "at2" + token[3:],
        token + ".x",
        "at1.!!!.???",
        "at1." + "A" * 5000 + ".AAAA",
    ]
    for bad in forged:
        with pytest.raises(TokenInvalid):
            tokens.verify(bad, now=1_900_000_000)


def _authentic(payload: bytes) -> str:
    """A token whose MAC verifies over ``payload`` (only the secret's holder can make one)."""
    import hashlib
    import hmac

    mac = hmac.new(SECRET, b"shopping-arena/episode-token/v1\n" + payload, hashlib.sha256).digest()
    encode = lambda data: base64.urlsafe_b64encode(data).rstrip(b"=").decode()  # noqa: E731
    return f"at1.{encode(payload)}.{encode(mac)}"


@pytest.mark.parametrize(
    "payload",
    [
        b"not json",
        b"\xff\xfe",
        b"[1, 2]",
        b'{"e": "ep-1", "h": "5Miner", "t": "t-1"}',
        b'{"e": "ep-1", "h": "5Miner", "t": "t-1", "x": "soon"}',
        b'{"e": "ep-1", "h": "5Miner", "t": "t-1", "x": true}',
        b'{"e": 7, "h": "5Miner", "t": "t-1", "x": 1900000000}',
        b'{"e": "ep-1", "h": "5Miner", "t": "t-1", "x": 1900000000, "y": 1}',
        b'{"e": "ep-1", "e": "ep-2", "h": "5Miner", "t": "t-1", "x": 1900000000}',
    ],
)
def test_an_authentic_token_with_malformed_claims_is_invalid_not_a_crash(payload: bytes) -> None:
    with pytest.raises(TokenInvalid, match="claims"):
        EpisodeTokens(SECRET).verify(_authentic(payload), now=1_800_000_000)


def test_token_expires() -> None:
    tokens = EpisodeTokens(SECRET)
    token = tokens.mint(CLAIMS)
    tokens.verify(token, now=CLAIMS.expires_at - 1)
    with pytest.raises(TokenExpired):
        tokens.verify(token, now=CLAIMS.expires_at)
    # expiry is checked only after the signature: a forged token is never "expired"
    assert tokens.claims(token) == CLAIMS


def test_short_secret_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 16 bytes"):
        EpisodeTokens(b"short")


@pytest.mark.parametrize(("calls", "seconds"), [(0, 10.0), (5, 0.0), (5, float("nan")), (5, float("inf"))])
def test_budgets_must_be_positive_and_finite(calls: int, seconds: float) -> None:
    with pytest.raises(ValueError):
        Budgets(max_calls=calls, max_seconds=seconds)


# --------------------------------------------------------------------------- registry: auth


def test_open_episode_token_authorizes_its_episode(registry: EpisodeRegistry, clock: Clock) -> None:
    episode_id, token = registry.open_episode("t-9", "5Miner", Budgets(10, 30.0))
    claims = registry.authorize(token)
    assert (claims.episode_id, claims.task_id, claims.miner_hotkey) == (episode_id, "t-9", "5Miner")
    assert claims.expires_at == int(clock.now + 30 + 60)


def test_closed_episode_is_forbidden(registry: EpisodeRegistry, ctx: ToolContext) -> None:
    episode_id, token = registry.open_episode("t-1", "5Miner", Budgets(10, 30.0))
    registry.close_episode(episode_id)
    with pytest.raises(EpisodeClosed, match="closed"):
        registry.authorize(token)
    with pytest.raises(EpisodeClosed):
        registry.call_tool(token, "terminate", {"status": "success"}, call_id="c1", ctx=ctx)


class CountingTokens(EpisodeTokens):
    """Counts MAC checks, to show which calls pay for one."""

    def __init__(self, secret: bytes) -> None:
        super().__init__(secret)
        self.checked = 0

    def claims(self, token: str) -> TokenClaims:
        self.checked += 1
        return super().claims(token)


def test_a_token_minted_here_is_known_by_its_string_and_still_expires_and_closes(
    clock: Clock, ctx: ToolContext
) -> None:
    tokens = CountingTokens(SECRET)
    registry = EpisodeRegistry(tokens, clock=clock, token_grace_s=0)
    episode_id, token = registry.open_episode("t-1", "5Miner", Budgets(10, 30.0))
    for _ in range(3):
        assert registry.authorize(token).episode_id == episode_id
    registry.call_tool(token, "terminate", {"status": "success"}, call_id=None, ctx=ctx)
    assert tokens.checked == 0  # no MAC recomputed, no claims parsed, for the string we minted
    clock.advance(30)
    with pytest.raises(TokenExpired):
        registry.authorize(token)
    _, other = registry.open_episode("t-2", "5Miner", Budgets(10, 30.0))
    registry.close_episode(registry.authorize(other).episode_id)
    with pytest.raises(EpisodeClosed, match="closed"):
        registry.authorize(other)


def test_a_variant_of_a_live_token_is_verified_in_full_and_refused(registry: EpisodeRegistry) -> None:
    _, token = registry.open_episode("t-1", "5Miner", Budgets(10, 30.0))
    version, payload, mac = token.split(".")
    flipped = mac[:-2] + ("AA" if mac[-2:] != "AA" else "BB")
    for variant in (f"{version}.{payload}.{flipped}", _swap_payload(token, t="t-2")):
        with pytest.raises(TokenInvalid):
            registry.authorize(variant)


def test_a_pruned_episode_forgets_its_token(clock: Clock) -> None:
    registry = EpisodeRegistry(EpisodeTokens(SECRET), clock=clock, token_grace_s=0)
    _, token = registry.open_episode("t-1", "5Miner", Budgets(10, 30.0))
    clock.advance(31)
    assert len(registry.prune()) == 1
    clock.advance(-31)  # even with the clock set back, a forgotten episode's token is refused
    with pytest.raises(EpisodeClosed, match="unknown episode"):
        registry.authorize(token)


def test_episode_of_another_registry_is_unknown(clock: Clock) -> None:
    first = EpisodeRegistry(EpisodeTokens(SECRET), clock=clock)
    second = EpisodeRegistry(EpisodeTokens(SECRET), clock=clock)
    _, token = first.open_episode("t-1", "5Miner", Budgets(10, 30.0))
    with pytest.raises(EpisodeClosed, match="unknown episode"):
        second.authorize(token)


def test_expired_token_is_refused_before_budgets(
    registry: EpisodeRegistry, clock: Clock, ctx: ToolContext
) -> None:
    _, token = registry.open_episode("t-1", "5Miner", Budgets(10, 30.0))
    clock.advance(30 + 60)
    with pytest.raises(TokenExpired):
        registry.call_tool(token, "terminate", {"status": "success"}, call_id=None, ctx=ctx)


def test_episode_errors_are_distinct() -> None:
    kinds = [TokenInvalid, TokenExpired, EpisodeClosed, BudgetExhausted]
    assert all(issubclass(kind, EpisodeError) for kind in kinds)
    assert len({kind for kind in kinds}) == 4
    assert not any(issubclass(a, b) for a in kinds for b in kinds if a is not b)


# --------------------------------------------------------------------------- registry: budgets


def test_call_budget_counts_every_call(registry: EpisodeRegistry, ctx: ToolContext) -> None:
    _, token = registry.open_episode("t-1", "5Miner", Budgets(max_calls=2, max_seconds=30.0))
    registry.call_tool(token, "find_product", {"q": "cymbal", "page": 1}, call_id="a", ctx=ctx)
    registry.call_tool(token, "find_product", {"page": 99}, call_id="b", ctx=ctx)  # an error still counts
    with pytest.raises(BudgetExhausted, match=r"tool-call budget spent \(2 calls\)"):
        registry.call_tool(token, "terminate", {"status": "success"}, call_id="c", ctx=ctx)


def test_wall_time_budget(registry: EpisodeRegistry, clock: Clock, ctx: ToolContext) -> None:
    _, token = registry.open_episode("t-1", "5Miner", Budgets(max_calls=10, max_seconds=30.0))
    clock.advance(30)
    registry.call_tool(token, "terminate", {"status": "success"}, call_id=None, ctx=ctx)  # at the limit: fine
    clock.advance(1)
    with pytest.raises(BudgetExhausted, match=r"wall-time budget spent \(30 s\)"):
        registry.call_tool(token, "terminate", {"status": "success"}, call_id=None, ctx=ctx)


def test_concurrent_calls_respect_the_call_budget(registry: EpisodeRegistry, ctx: ToolContext) -> None:
    _, token = registry.open_episode("t-1", "5Miner", Budgets(max_calls=30, max_seconds=60.0))

    def one(i: int) -> str:
        try:
            registry.call_tool(token, "find_product", {"q": "shoes", "page": 1}, call_id=f"c{i}", ctx=ctx)
        except BudgetExhausted:
            return "429"
        return "ok"

    with ThreadPoolExecutor(max_workers=16) as pool:
        outcomes = list(pool.map(one, range(100)))
    assert outcomes.count("ok") == 30
    assert [e.seq for e in registry.log(registry.authorize(token).episode_id)] == list(range(30))


# --------------------------------------------------------------------------- the tool log


def test_log_records_every_call(registry: EpisodeRegistry, clock: Clock, ctx: ToolContext) -> None:
    episode_id, token = registry.open_episode("t-1", "5Miner", Budgets(10, 30.0))
    first = registry.call_tool(
        token, "find_product", '{"q": " chili ", "page": 1, "sort": "default"}', call_id="call_1", ctx=ctx
    )
    clock.advance(2.5)
    second = registry.call_tool(
        token, "view_product_information", {"product_ids": "x"}, call_id=None, ctx=ctx
    )
    third = registry.call_tool(token, "no_such_tool", "{}", call_id="call_3", ctx=ctx)
    log = registry.log(episode_id)
    assert log == [first, second, third]
    assert [e.seq for e in log] == [0, 1, 2]
    assert [e.call_id for e in log] == ["call_1", None, "call_3"]
    assert [e.tool for e in log] == ["find_product", "view_product_information", "no_such_tool"]
    assert [e.status for e in log] == ["ok", "error", "error"]
    assert first.arguments == {"q": "chili", "page": 1}  # canonical
    assert {row["product_id"] for row in json.loads(first.result)} == {"4001", "4002", "4003"}
    assert all(e.result_hash == result_hash(e.result) for e in log)
    assert all(e.episode_id == episode_id for e in log)
    assert first.started_at.tzinfo is UTC and first.finished_at >= first.started_at
    assert (second.started_at - first.started_at).total_seconds() == pytest.approx(2.5)


def test_log_survives_closing(registry: EpisodeRegistry, ctx: ToolContext) -> None:
    episode_id, token = registry.open_episode("t-1", "5Miner", Budgets(10, 30.0))
    registry.call_tool(token, "terminate", {"status": "failure"}, call_id="z", ctx=ctx)
    registry.close_episode(episode_id)
    assert [e.call_id for e in registry.log(episode_id)] == ["z"]
    assert [e.call_id for e in registry.log_for_token(token, episode_id)] == ["z"]


def test_log_for_token_only_reads_its_own_episode(registry: EpisodeRegistry) -> None:
    mine, token = registry.open_episode("t-1", "5Miner", Budgets(10, 30.0))
    theirs, _ = registry.open_episode("t-2", "5Other", Budgets(10, 30.0))
    assert registry.log_for_token(token, mine) == []
    with pytest.raises(EpisodeClosed, match="another episode"):
        registry.log_for_token(token, theirs)
    with pytest.raises(TokenInvalid):
        registry.log_for_token("at1.e30.AAAA", mine)


def test_concurrent_calls_get_unique_increasing_seq(registry: EpisodeRegistry, ctx: ToolContext) -> None:
    episode_id, token = registry.open_episode("t-1", "5Miner", Budgets(max_calls=1000, max_seconds=60.0))
    barrier = threading.Barrier(8)

    def worker(n: int) -> list[int]:
        barrier.wait()
        return [
            registry.call_tool(token, "terminate", {"status": "success"}, call_id=f"{n}-{i}", ctx=ctx).seq
            for i in range(50)
        ]

    with ThreadPoolExecutor(max_workers=8) as pool:
        per_thread = list(pool.map(worker, range(8)))
    for seqs in per_thread:
        assert seqs == sorted(seqs)  # increasing within each caller
    assert sorted(s for seqs in per_thread for s in seqs) == list(range(400))
    assert [e.seq for e in registry.log(episode_id)] == list(range(400))


def _entry(episode_id: str, seq: int) -> ToolLogEntry:
    now = datetime.now(UTC)
    return ToolLogEntry(
        episode_id=episode_id,
        seq=seq,
        tool="terminate",
        arguments={"status": "success"},
        result='"bye"',
        result_hash=result_hash('"bye"'),
        status="ok",
        started_at=now,
        finished_at=now,
    )


def test_in_memory_log_orders_by_seq_and_discards() -> None:
    store = InMemoryToolLog()
    for seq in (2, 0, 1):
        store.append(_entry("a", seq))
    store.append(_entry("b", 0))
    assert [e.seq for e in store.entries("a")] == [0, 1, 2]
    store.discard("a")
    assert store.entries("a") == []
    assert [e.episode_id for e in store.entries("b")] == ["b"]
    assert store.entries("unknown") == []


def test_full_registry_prunes_expired_episodes(clock: Clock, ctx: ToolContext) -> None:
    store = InMemoryToolLog()
    registry = EpisodeRegistry(EpisodeTokens(SECRET), store, clock=clock, token_grace_s=0, max_episodes=2)
    old, token = registry.open_episode("t", "h", Budgets(5, 10.0))
    registry.call_tool(token, "terminate", {"status": "success"}, call_id=None, ctx=ctx)
    registry.open_episode("t", "h", Budgets(5, 100.0))
    with pytest.raises(BudgetExhausted, match="too many open episodes"):
        registry.open_episode("t", "h", Budgets(5, 10.0))
    clock.advance(11)  # the first episode's token has expired; the second is still live
    registry.open_episode("t", "h", Budgets(5, 10.0))
    assert store.entries(old) == []
    with pytest.raises(BudgetExhausted):
        registry.open_episode("t", "h", Budgets(5, 10.0))


def test_call_authorized_checks_the_expiry_again(fixture_index: SearchIndex) -> None:
    now = [1_700_000_000.0]
    registry = EpisodeRegistry(EpisodeTokens(b"k" * 32), clock=lambda: now[0], token_grace_s=0)
    _, token = registry.open_episode("t-1", "5Miner", Budgets(5, 10.0))
    claims = registry.authorize(token)
    now[0] += 11
    with pytest.raises(TokenExpired):
        registry.call_authorized(
            claims, "terminate", "{}", call_id=None, ctx=ToolContext(index=fixture_index)
        )
