"""Episodes on the tool server: the registry, budgets and the tool log (tokens: ``arena.episode_tokens``)."""

from __future__ import annotations

import dataclasses
import hmac
import logging
import math
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol, cast

from arena.arguments import parse_arguments
from arena.episode_tokens import MIN_SECRET_BYTES, EpisodeTokens, TokenClaims
from arena.errors import BudgetExhausted, EpisodeClosed, TokenExpired, TokenInvalid
from arena.index_types import VersionedIndex
from arena.inference import InferenceExchange, InferenceLog
from arena.tools import Arguments, ToolContext, run_call
from arena.types import NonceStatus, ToolLogEntry, result_hash
from arena.world.shopper import ShopperSession

# The tokens live in arena.episode_tokens; the rest of the code imports them from here.
__all__ = ["MIN_SECRET_BYTES", "EpisodeTokens", "TokenClaims"]

logger = logging.getLogger(__name__)

_MAX_TOOL_NAME_CHARS = 64


def run_logged(
    name: str,
    arguments: Arguments,
    ctx: ToolContext,
    *,
    episode_id: str,
    seq: int,
    call_id: str | None,
    raw: str | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    nonce_status: NonceStatus = "none",
) -> ToolLogEntry:
    """Run one tool call and return its tool-log entry, exactly as the tool server logs it.

    The one place a ``ToolLogEntry`` is made from a call: the tool server, offline replay and the
    in-process evaluation harness all log through it, so their logs are interchangeable.
    ``arguments`` is the call's JSON text, or that text already read (then ``raw`` is the text,
    which the log keeps for arguments that are not an object). Over a world that changes during
    the episode, the call runs at the version its ``seq`` sees, and the entry records it.
    ``nonce_status`` is ``valid`` for a call the inference gateway attested (``arena.inference``).
    """
    started = now()
    if isinstance(arguments, str):
        raw, arguments = arguments, parse_arguments(arguments)  # read once, for the run and the log
    ctx, version = _world_at(ctx, seq)
    result, canonical = run_call(name, arguments, ctx, raw=raw)  # validated once, for both
    finished = now()
    return ToolLogEntry(
        episode_id=episode_id,
        seq=seq,
        call_id=call_id,
        tool=name[:_MAX_TOOL_NAME_CHARS],
        arguments=canonical,
        result=result.content,
        result_hash=result_hash(result.content),
        status="error" if result.error else "ok",
        started_at=started,
        finished_at=finished,
        nonce_status=nonce_status,
        world_version=version,
    )


def _world_at(ctx: ToolContext, seq: int) -> tuple[ToolContext, int | None]:
    """The context a call runs in: over a versioned world, the version its ``seq`` sees (else as given)."""
    index = ctx.index
    # VersionedIndex's own test, spelled out: isinstance against a runtime protocol costs ~8 µs
    # per tool call on Python 3.11 (it rebuilds the protocol's member list each time).
    if getattr(index, "version_after", None) is None or getattr(index, "at_version", None) is None:
        return ctx, None
    versioned = cast(VersionedIndex, index)
    version = versioned.version_after(seq)
    return dataclasses.replace(ctx, index=versioned.at_version(version)), version


@dataclass(frozen=True)
class Budgets:
    """Per-episode limits: how many tool calls, and how many seconds after opening calls are accepted."""

    max_calls: int
    max_seconds: float

    def __post_init__(self) -> None:
        if self.max_calls < 1 or not (math.isfinite(self.max_seconds) and self.max_seconds > 0):
            raise ValueError(f"budgets must be positive and finite: {self}")


class ToolLogStore(Protocol):
    """Where tool-log entries go; ``storage`` provides a persistent implementation."""

    def append(self, entry: ToolLogEntry) -> None:
        """Record one executed tool call."""
        ...

    def entries(self, episode_id: str) -> list[ToolLogEntry]:
        """Return an episode's entries ordered by ``seq``."""
        ...


class InMemoryToolLog:
    """A thread-safe in-memory tool log (tests, practice mode, and until storage persists it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, list[ToolLogEntry]] = {}

    def append(self, entry: ToolLogEntry) -> None:
        """Record one executed tool call."""
        with self._lock:
            self._entries.setdefault(entry.episode_id, []).append(entry)

    def entries(self, episode_id: str) -> list[ToolLogEntry]:
        """Return an episode's entries ordered by ``seq`` (concurrent calls may finish out of order)."""
        with self._lock:
            return sorted(self._entries.get(episode_id, ()), key=lambda e: e.seq)

    def discard(self, episode_id: str) -> None:
        """Forget an episode's entries (the registry prunes long-expired episodes to bound memory)."""
        with self._lock:
            self._entries.pop(episode_id, None)


@dataclass
class _Episode:
    claims: TokenClaims
    budgets: Budgets
    opened_at: float
    token: str
    calls: int = 0
    closed: bool = False
    shopper: ShopperSession | None = None  # the simulated shopper of a world task (ask_user)
    context: ToolContext | None = None  # the world its tools run against (None: the server's)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


class EpisodeRegistry:
    """Open episodes: tokens, budgets and the log of every call made with them.

    Thread-safe: tool calls run in a thread pool, and concurrent calls of one episode get unique,
    increasing ``seq`` in arrival order.
    """

    def __init__(
        self,
        tokens: EpisodeTokens,
        log: ToolLogStore | None = None,
        *,
        clock: Callable[[], float] = time.time,
        token_grace_s: float = 300.0,
        max_episodes: int = 100_000,
        inference: InferenceLog | None = None,
    ) -> None:
        """Create a registry.

        Args:
            tokens: mints and verifies the episode tokens (holds the server secret).
            log: where call entries go; an ``InMemoryToolLog`` when omitted.
            clock: unix time in seconds (injectable for tests).
            token_grace_s: how long a token outlives the wall-time budget, so that a late call
                gets a clear 429 "wall time spent" rather than a bare "expired".
            max_episodes: episodes kept at once; expired ones are pruned to make room.
            inference: where the inference gateway records exchanges (an ``InferenceLog`` when
                omitted); a call the tool server receives is attested against it.
        """
        self._tokens = tokens
        self._log: ToolLogStore = log if log is not None else InMemoryToolLog()
        self.inference: InferenceLog = inference if inference is not None else InferenceLog()
        self._clock = clock
        self._grace = token_grace_s
        self._max_episodes = max_episodes
        self._lock = threading.Lock()
        self._episodes: dict[str, _Episode] = {}
        # The tokens minted here, so a call presenting one costs a lookup, not a MAC and a claims
        # parse (the exact string was ours to make; a lookup miss is verified in full).
        self._by_token: dict[str, _Episode] = {}

    def open_episode(
        self,
        task_id: str,
        miner_hotkey: str,
        budgets: Budgets,
        *,
        context: ToolContext | None = None,
        shopper: ShopperSession | None = None,
    ) -> tuple[str, str]:
        """Open an episode and return ``(episode_id, token)``.

        ``context`` is what the episode's tools run against (a world round's overlay); None: the
        context the tool server passes with each call (the base index). ``shopper`` answers the
        episode's ``ask_user`` calls (a world task's hidden profile, tool set arena-3); without
        one, ``ask_user`` is an error result.

        Raises:
            BudgetExhausted: the registry is full even after pruning expired episodes.
        """
        now = self._clock()
        episode_id = f"ep-{uuid.uuid4().hex}"
        expires_at = math.ceil(now + budgets.max_seconds + self._grace)
        claims = TokenClaims(episode_id, miner_hotkey, task_id, expires_at)
        token = self._tokens.mint(claims)
        with self._lock:
            if len(self._episodes) >= self._max_episodes:
                self._prune_locked(now)
            if len(self._episodes) >= self._max_episodes:
                raise BudgetExhausted(f"too many open episodes ({self._max_episodes}); try again later")
            episode = _Episode(
                claims=claims, budgets=budgets, opened_at=now, token=token, context=context, shopper=shopper
            )
            self._episodes[episode_id] = self._by_token[token] = episode
        logger.debug("episode_open episode=%s task=%s hotkey=%s", episode_id, task_id, miner_hotkey)
        return episode_id, token

    def close_episode(self, episode_id: str) -> None:
        """Close an episode: its token is refused from now on; its log stays readable."""
        with self._lock:
            episode = self._episodes.get(episode_id)
            if episode is not None:
                episode.closed = True

    def forget(self, episode_id: str) -> None:
        """Drop a closed episode at once (its token is then refused as unknown; its log, if in memory, goes).

        For a caller that keeps the log itself and runs episodes back to back (the RL
        environment): waiting for the token to expire would hold every finished episode.
        """
        with self._lock:
            episode = self._episodes.pop(episode_id, None)
            if episode is not None:
                episode.closed = True
                self._by_token.pop(episode.token, None)
        if isinstance(self._log, InMemoryToolLog):
            self._log.discard(episode_id)

    def log(self, episode_id: str) -> list[ToolLogEntry]:
        """Return the episode's tool log, ordered by ``seq``."""
        return self._log.entries(episode_id)

    def inference_log(self, episode_id: str) -> list[InferenceExchange]:
        """Return the episode's exchanges through the inference gateway, ordered by ``seq``."""
        return self.inference.exchanges(episode_id)

    def authorize(self, token: str) -> TokenClaims:
        """Return the claims of a token that may make calls now.

        A token this registry minted is known by its exact string: its MAC and claims are not
        checked again, only its expiry and whether its episode is still open. Any other string
        is verified in full (and refused: a forgery, or an episode this registry never opened).

        Raises:
            TokenInvalid, TokenExpired: the token itself is bad (HTTP 401).
            EpisodeClosed: the episode is closed or unknown here (HTTP 403).
        """
        now = self._clock()
        with self._lock:
            episode = self._by_token.get(token)
        if episode is None:
            claims = self._tokens.verify(token, now=now)
            self._open_episode(claims)
            return claims
        if now >= episode.claims.expires_at:
            raise TokenExpired(f"episode token expired at {episode.claims.expires_at}")
        if episode.closed:
            raise EpisodeClosed("episode is closed")
        return episode.claims

    def log_for_token(self, token: str, episode_id: str) -> list[ToolLogEntry]:
        """Return an episode's log to the holder of its token (expired or closed tokens included).

        Raises:
            TokenInvalid: the token is malformed or forged.
            EpisodeClosed: the token is for another episode.
        """
        claims = self._tokens.claims(token)
        if not hmac.compare_digest(claims.episode_id.encode(), episode_id.encode()):
            raise EpisodeClosed("this token belongs to another episode")
        return self.log(episode_id)

    def call_tool(
        self, token: str, name: str, arguments: str | dict[str, Any], *, call_id: str | None, ctx: ToolContext
    ) -> ToolLogEntry:
        """Authorize, charge the budget, run one tool call and append it to the log.

        Agent faults in the call itself (unknown tool, bad arguments) are logged results with
        status ``error``; only token and budget problems raise. A call sent as text is attested
        (``nonce_status`` ``valid``) when it matches, byte for byte, a tool call of a completion
        the inference gateway served the episode before now (``InferenceLog.attest``).

        Raises:
            TokenInvalid, TokenExpired, EpisodeClosed, BudgetExhausted.
        """
        return self.call_authorized(self.authorize(token), name, arguments, call_id=call_id, ctx=ctx)

    def call_authorized(
        self,
        claims: TokenClaims,
        name: str,
        arguments: str | dict[str, Any],
        *,
        call_id: str | None,
        ctx: ToolContext,
    ) -> ToolLogEntry:
        """``call_tool`` for the claims ``authorize`` returned: the token is not looked at again.

        The tool server authorizes a call before reading its body and runs it after; the
        token's expiry is checked again here, at the charge.

        Raises:
            TokenExpired, TokenInvalid, EpisodeClosed, BudgetExhausted.
        """
        if self._clock() >= claims.expires_at:
            raise TokenExpired(f"episode token expired at {claims.expires_at}")
        seq, episode = self._charge(claims)
        attested = isinstance(arguments, str) and self.inference.attest(claims.episode_id, name, arguments)
        run_ctx = episode.context or ctx
        if episode.shopper is not None:
            run_ctx = replace(run_ctx, shopper=episode.shopper)
        entry = run_logged(
            name,
            arguments,
            run_ctx,
            episode_id=claims.episode_id,
            seq=seq,
            call_id=call_id,
            now=self._now,
            nonce_status="valid" if attested else "none",
        )
        self._log.append(entry)
        logger.debug(
            "tool_call episode=%s seq=%d tool=%s status=%s", claims.episode_id, seq, name, entry.status
        )
        return entry

    def prune(self) -> list[str]:
        """Forget episodes whose tokens have expired (their logs too, if the log is in memory)."""
        with self._lock:
            return self._prune_locked(self._clock())

    def _prune_locked(self, now: float) -> list[str]:
        gone = [eid for eid, ep in self._episodes.items() if now >= ep.claims.expires_at]
        for episode_id in gone:
            del self._by_token[self._episodes.pop(episode_id).token]
            if isinstance(self._log, InMemoryToolLog):
                self._log.discard(episode_id)
            self.inference.discard(episode_id)
        return gone

    def _open_episode(self, claims: TokenClaims) -> _Episode:
        with self._lock:
            episode = self._episodes.get(claims.episode_id)
        if episode is None:
            raise EpisodeClosed("unknown episode (closed and forgotten, or opened by another server)")
        if episode.claims != claims:
            raise TokenInvalid("episode token does not match its episode")
        if episode.closed:
            raise EpisodeClosed("episode is closed")
        return episode

    def _charge(self, claims: TokenClaims) -> tuple[int, _Episode]:
        episode = self._open_episode(claims)
        with episode.lock:
            if episode.closed:
                raise EpisodeClosed("episode is closed")
            if episode.calls >= episode.budgets.max_calls:
                raise BudgetExhausted(f"tool-call budget spent ({episode.budgets.max_calls} calls)")
            elapsed = self._clock() - episode.opened_at
            if elapsed > episode.budgets.max_seconds:
                raise BudgetExhausted(f"wall-time budget spent ({episode.budgets.max_seconds:g} s)")
            seq = episode.calls
            episode.calls += 1
        return seq, episode

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock(), UTC)
