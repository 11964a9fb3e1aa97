"""The inference gateway's record: each exchange an episode's agent made through it, and attested tool calls.

The gateway (``arena.gateway``) forwards an agent's chat-completion requests to the upstream it
names and appends every exchange here: the request's and the response's bytes (as UTF-8 text),
the status served, and whose the outcome is. Each tool call of a completion it served is kept
as *served*; when the tool server then receives a call, :meth:`InferenceLog.attest` looks for a
served call with the same name and the same argument bytes, and uses it up. A call that matches
is *attested*: the model emitted it, in a completion the validator saw, before the tool server
received it (``ToolLogEntry.nonce_status == "valid"``; ``judging.axis`` labels a trajectory
whose every call is attested ``A-attested``).
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from arena.types import Frozen

# Whose an exchange's outcome is. ``ok``: a completion was served. ``refused``: the agent's
# request broke a rule of the gateway (size, streaming, the upstream's address) - the miner's.
# ``upstream_error``: the upstream the miner named failed (status, timeout, unreachable, too
# large, not JSON) - the miner's, as a failing model is when called directly. ``gateway_error``:
# the gateway itself failed (our bug, our capacity) - ours: the episode never scores the miner.
ExchangeOutcome = Literal["ok", "refused", "upstream_error", "gateway_error"]
EXCHANGE_OUTCOMES: tuple[ExchangeOutcome, ...] = ("ok", "refused", "upstream_error", "gateway_error")
GATEWAY_FAULT: ExchangeOutcome = "gateway_error"


class InferenceExchange(Frozen):
    """One request an episode's agent sent through the gateway, and what the gateway answered.

    Attributes:
        episode_id: the episode whose token authorised the request.
        seq: its place among the episode's exchanges (0, 1, ...).
        upstream: the upstream's base URL as named (scheme, host, port, path; never a key).
        request: the request body as received ("" when it was refused before it was read).
        response: the body served to the agent: the upstream's bytes when ``ok``, the upstream's
            (bounded) error body on ``upstream_error``, else the gateway's own refusal.
        status: the HTTP status served to the agent.
        outcome: whose the outcome is (``ExchangeOutcome``).
        tool_calls: the tool calls in the served completion (0 unless ``ok``).
        started_at: when the request arrived.
        finished_at: when the answer was ready.
    """

    episode_id: str
    seq: int = Field(ge=0)
    upstream: str
    request: str
    response: str
    status: int = Field(ge=100, le=599)
    outcome: ExchangeOutcome
    tool_calls: int = Field(default=0, ge=0)
    started_at: datetime
    finished_at: datetime


ServedCall = tuple[str, str]  # (function name, arguments text), exactly as the completion holds them


def completion_tool_calls(body: Any) -> list[ServedCall]:
    """The function tool calls of a chat completion's first choice, name and arguments as written.

    Only ``choices[0]``: the gateway refuses ``n`` other than 1, and an agent reads the first
    choice. A call whose name or arguments is not a string is no call (nothing can match it).
    """
    choices = body.get("choices") if isinstance(body, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    served: list[ServedCall] = []
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        name, arguments = function.get("name"), function.get("arguments")
        if isinstance(name, str) and isinstance(arguments, str):
            served.append((name, arguments))
    return served


def served_calls(response: str) -> list[ServedCall]:
    """The tool calls of a served completion's JSON text (none when it does not parse)."""
    try:
        return completion_tool_calls(json.loads(response))
    except (ValueError, RecursionError):
        return []


class InferenceLog:
    """Thread-safe, in memory: each episode's exchanges, its reserved seqs, and its served calls not yet used.

    The episode registry owns one (``EpisodeRegistry.inference``) and forgets an episode's
    entries when it prunes the episode; the validator stores them with the episode.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._exchanges: dict[str, list[InferenceExchange]] = {}
        self._reserved: dict[str, int] = {}
        self._served: dict[str, Counter[ServedCall]] = {}

    def reserve(self, episode_id: str, max_exchanges: int) -> int | None:
        """The next exchange's ``seq`` for the episode, or None when it has had ``max_exchanges``."""
        with self._lock:
            seq = self._reserved.get(episode_id, 0)
            if seq >= max_exchanges:
                return None
            self._reserved[episode_id] = seq + 1
            return seq

    def append(self, exchange: InferenceExchange) -> None:
        """Record one exchange; an ``ok`` one's tool calls become served (before its answer is sent)."""
        calls = served_calls(exchange.response) if exchange.outcome == "ok" else []
        with self._lock:
            self._exchanges.setdefault(exchange.episode_id, []).append(exchange)
            if calls:
                self._served.setdefault(exchange.episode_id, Counter()).update(calls)

    def exchanges(self, episode_id: str) -> list[InferenceExchange]:
        """The episode's exchanges, ordered by ``seq``."""
        with self._lock:
            return sorted(self._exchanges.get(episode_id, ()), key=lambda e: e.seq)

    def attest(self, episode_id: str, name: str, arguments: str) -> bool:
        """Whether a served call of the episode matches this received call byte for byte (used up if so).

        Each served call attests one received call: a harness repeating a call the model made
        once gets one attested call, not several.
        """
        with self._lock:
            served = self._served.get(episode_id)
            if not served or served[(name, arguments)] <= 0:
                return False
            served[(name, arguments)] -= 1
            return True

    def discard(self, episode_id: str) -> None:
        """Forget an episode (the registry prunes long-expired episodes to bound memory)."""
        with self._lock:
            self._exchanges.pop(episode_id, None)
            self._reserved.pop(episode_id, None)
            self._served.pop(episode_id, None)
