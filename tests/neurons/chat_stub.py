"""A scripted OpenAI-compatible chat server on loopback, for testing code that uses the real `openai` client.

Each ``POST /v1/chat/completions`` answers with the next scripted reply and records the request
body. A reply is an assistant message dict, an ``int`` HTTP status (an error), or ``Delay``.

    async with ChatStub([reply_calls(("find_product", {"q": "x", "page": 1}))]) as stub:
        agent = make_llm_agent(stub.base_url, "stub-model")
"""

from __future__ import annotations

import asyncio
import json
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from itertools import count
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from tests.neurons.standins import serve_app


@dataclass(frozen=True)
class Delay:
    """Answer with ``reply`` after ``seconds``."""

    seconds: float
    reply: dict[str, Any] | int


def tool_call(name: str, arguments: dict[str, Any] | str, call_id: str | None = None) -> dict[str, Any]:
    """Return one OpenAI tool call; ``arguments`` may be a raw (even malformed) JSON string."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id or "", "type": "function", "function": {"name": name, "arguments": raw}}


_ids = count(1)


def reply_calls(
    *calls: tuple[str, dict[str, Any] | str], content: str | None = None, **extra: Any
) -> dict[str, Any]:
    """Return an assistant message calling the given tools, with fresh call ids."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "tool_calls": [tool_call(name, args, f"call_stub_{next(_ids)}") for name, args in calls],
    }
    return {**message, **extra}


def reply_text(content: str) -> dict[str, Any]:
    """Return an assistant message with text and no tool call."""
    return {"role": "assistant", "content": content}


@dataclass
class ChatStub:
    """The scripted server; use as ``async with``. ``requests`` holds every received body."""

    replies: list[dict[str, Any] | int | Delay]
    usage: tuple[int, int] | None = (100, 10)
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
            self.requests.append(await request.json())
            reply: dict[str, Any] | int | Delay = self.replies.pop(0) if self.replies else 500
            if isinstance(reply, Delay):
                await asyncio.sleep(reply.seconds)
                reply = reply.reply
            if isinstance(reply, int):
                return JSONResponse({"error": {"message": f"scripted error {reply}"}}, status_code=reply)
            body: dict[str, Any] = {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": "stub-model",
                "choices": [
                    {
                        "index": 0,
                        "message": reply,
                        "finish_reason": "tool_calls" if reply.get("tool_calls") else "stop",
                    }
                ],
            }
            if self.usage is not None:
                prompt, completion = self.usage
                body["usage"] = {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                }
            return JSONResponse(body)

        return app

    async def __aenter__(self) -> ChatStub:
        # force_exit: do not wait for a scripted slow reply.
        url = await self._serving.enter_async_context(serve_app(self.app(), force_exit=True))
        self.port = int(url.rsplit(":", 1)[1])
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._serving.aclose()
