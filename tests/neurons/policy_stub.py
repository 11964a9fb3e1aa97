"""A loopback OpenAI-compatible chat server whose replies depend on the request: a scripted policy per query.

Unlike ``ChatStub`` (one reply list, consumed in order), replies here are computed from each
request's body, so concurrent episodes and resumed runs get the right reply whatever the
order. A ``Script`` per user query fixes the calls: search, view the answer (unless it is to be
hallucinated), recommend, terminate. Whether a sample answers right is decided by the request's
``seed``, so a test knows exactly which samples succeed.

It can run inside the test's event loop (``async with``) or in a thread of its own
(``with stub.in_thread():``) for code under test that runs its own loop or process.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from tests.neurons.standins import serve_app, serve_app_in_thread


@dataclass(frozen=True)
class Script:
    """How the policy answers one query: the gold id when the seed is a success seed, else ``wrong``."""

    q: str
    gold: str
    wrong: str
    success_seeds: frozenset[int] = frozenset()
    hallucinate_wrong: bool = False  # recommend ``wrong`` without ever seeing it in a tool result
    view: bool = True  # view the answer before recommending it


def _call(name: str, arguments: dict[str, Any], turn: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{turn}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }


def policy_reply(script: Script, body: dict[str, Any]) -> dict[str, Any]:
    """The assistant message for this request: the next call of the script's episode."""
    messages = body.get("messages", [])
    turn = sum(1 for m in messages if m.get("role") == "assistant")
    ok = body.get("seed") in script.success_seeds
    answer = script.gold if ok else script.wrong
    calls: list[tuple[str, dict[str, Any]]] = [("find_product", {"q": script.q, "page": 1})]
    if script.view and (ok or not script.hallucinate_wrong):
        calls.append(("view_product_information", {"product_ids": answer}))
    calls += [("recommend_product", {"product_ids": answer}), ("terminate", {"status": "success"})]
    name, arguments = calls[min(turn, len(calls) - 1)]
    return _call(name, arguments, turn)


@dataclass
class PolicyStub:
    """The server. ``requests`` holds every request body received, in arrival order."""

    scripts: dict[str, Script]
    delay_s: float = 0.0
    usage: tuple[int, int] = (100, 10)
    status: int | None = None  # answer every request with this HTTP error instead
    judge_reply: str = ""  # the text answering a request without tools (the reasoning judge's)
    requests: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0
    _serving: AsyncExitStack = field(default_factory=AsyncExitStack)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def complete(request: Request) -> JSONResponse:
            body = await request.json()
            self.requests.append(body)
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            if self.status is not None:
                return JSONResponse({"error": {"message": "scripted failure"}}, status_code=self.status)
            if "tools" not in body:
                reply: dict[str, Any] = {"role": "assistant", "content": self.judge_reply}
            else:
                query = next(m["content"] for m in body["messages"] if m["role"] == "user")
                reply = policy_reply(self.scripts[query], body)
            prompt, completion = self.usage
            return JSONResponse(
                {
                    "id": f"chatcmpl-{len(self.requests)}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", "stub"),
                    "choices": [{"index": 0, "message": reply, "finish_reason": "stop"}],
                    "usage": {
                        "prompt_tokens": prompt,
                        "completion_tokens": completion,
                        "total_tokens": prompt + completion,
                    },
                }
            )

        return app

    async def __aenter__(self) -> PolicyStub:
        url = await self._serving.enter_async_context(serve_app(self.app(), force_exit=True))
        self.port = int(url.rsplit(":", 1)[1])
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._serving.aclose()

    @contextmanager
    def in_thread(self) -> Iterator[PolicyStub]:
        """Serve from a thread with its own event loop, for code under test that runs its own loop."""
        with serve_app_in_thread(self.app()) as url:
            self.port = int(url.rsplit(":", 1)[1])
            yield self
