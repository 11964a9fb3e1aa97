"""The miner's side of the validator's tool server: a ToolCaller over httpx, bounded by the episode's budgets.

Every failure of a tool call (refused token, exhausted budget, unreachable server, passed
deadline) becomes ``ToolResult(error=True)`` for the agent: agent-side faults are data, and
the agent decides whether to go on.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

import httpx

from arena.types import ToolResult
from neurons.protocol import HEADER_CALL_ID

logger = logging.getLogger(__name__)

ToolCallFn = Callable[[str, dict[str, Any], str], Awaitable[ToolResult]]
MAX_TOOL_RESPONSE_BYTES = 4 * 1024 * 1024


class EpisodeTools:
    """Calls one episode's tools: the token, the call budget and the deadline of one TaskRequest.

    An instance is the ``ToolCaller`` handed to the agent (``await tools(name, arguments, call_id)``).
    """

    def __init__(
        self,
        http: httpx.AsyncClient,
        *,
        base_url: str,
        token: str,
        max_calls: int,
        deadline: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Bind the episode.

        Args:
            http: the miner's long-lived client.
            base_url: the tool server's base URL (tools live at ``/v1/tools/{name}`` under it).
            token: the episode's bearer token.
            max_calls: the request's tool-call budget (the tool server enforces it too).
            deadline: the episode's end on ``clock``; no call starts or outlives it.
            clock: monotonic time source.
        """
        self._http = http
        self._base_url = base_url.rstrip("/")
        self._token = token
        self._max_calls = max_calls
        self._deadline = deadline
        self._clock = clock
        self.calls = 0

    async def __call__(
        self, name: str, arguments: dict[str, Any], call_id: str, *, raw: str | None = None
    ) -> ToolResult:
        """Run one tool call on the validator's tool server; failures come back as error results.

        ``raw`` (the model's own JSON text of ``arguments``) is sent as it is, byte for byte, so
        the validator can attest the call; without it ``arguments`` is serialised here.
        """
        if self.calls >= self._max_calls:
            return ToolResult(content=f"tool call budget exhausted ({self._max_calls} calls)", error=True)
        remaining = self._deadline - self._clock()
        if remaining <= 0:
            return ToolResult(content="episode deadline passed; no more tool calls", error=True)
        self.calls += 1
        try:
            body = (raw if raw is not None else json.dumps(arguments, ensure_ascii=False)).encode("utf-8")
        except (TypeError, ValueError) as exc:  # a lone surrogate in raw is a UnicodeEncodeError
            return ToolResult(content=f"arguments are not JSON-serialisable: {exc}", error=True)
        url = f"{self._base_url}/v1/tools/{quote(name, safe='')}"
        headers = {
            "Authorization": f"Bearer {self._token}",
            HEADER_CALL_ID: call_id[:128],
            "Content-Type": "application/json",
        }
        try:
            response = await self._http.post(url, content=body, headers=headers, timeout=remaining)
        except httpx.TimeoutException:
            return ToolResult(content="tool server did not answer before the episode deadline", error=True)
        except httpx.HTTPError as exc:
            logger.warning("tool_call_failed tool=%s kind=%s", name, type(exc).__name__)
            return ToolResult(content=f"tool server unreachable ({type(exc).__name__})", error=True)
        return _result(response)


def _result(response: httpx.Response) -> ToolResult:
    if len(response.content) > MAX_TOOL_RESPONSE_BYTES:
        return ToolResult(content="tool server answer too large", error=True)
    try:
        payload = response.json()
    except ValueError:
        payload = None
    if response.status_code != 200:
        detail = payload.get("detail") if isinstance(payload, dict) else None
        message = detail if isinstance(detail, str) else response.reason_phrase
        return ToolResult(
            content=f"tool server refused the call ({response.status_code}): {message}", error=True
        )
    if not isinstance(payload, dict) or not isinstance(payload.get("content"), str):
        return ToolResult(content="tool server answer is not a tool result", error=True)
    return ToolResult(content=payload["content"], error=bool(payload.get("error", False)))
