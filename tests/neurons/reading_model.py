"""A fake OpenAI-compatible model on loopback that reads each request: it chooses its calls from what it sees.

It searches the first item's words, views the two first ids of the last search result, recommends
the first, then terminates: every call follows from the conversation in the request, as a
model's would (not from a script indexed by turn). It records each request's body and
``Authorization`` header, so a test can check what reached the model.
"""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from tests.neurons.standins import serve_app


def _next_call(messages: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    query = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
    calls = [c["function"]["name"] for m in messages for c in m.get("tool_calls") or ()]
    results = [m.get("content") or "" for m in messages if m.get("role") == "tool"]
    if not calls:
        return "find_product", {"q": _keywords(query), "page": 1}
    if calls[-1] == "find_product":
        ids = _ids(results[-1] if results else "")
        if ids:
            return "view_product_information", {"product_ids": ",".join(ids[:2])}
        return "terminate", {"status": "failure"}
    if calls[-1] == "view_product_information":
        ids = _ids(next((r for r in reversed(results[:-1]) if r.startswith("[")), ""))
        return "recommend_product", {"product_ids": ids[0] if ids else ""}
    return "terminate", {"status": "success"}


_STOP = {"looking", "want", "need", "store", "shop", "that", "offers", "following", "items", "with", "some"}


def _keywords(query: str) -> str:
    """The first four content words of the first item asked for (what a model would search)."""
    item = query.split("(1)", 1)[-1]
    words = [w.strip(".,;:()").lower() for w in item.split()]
    return " ".join([w for w in words if w.isalpha() and len(w) >= 4 and w not in _STOP][:4])


def _ids(result: str) -> list[str]:
    try:
        rows = json.loads(result)
    except ValueError:
        return []
    return (
        [str(r["product_id"]) for r in rows if isinstance(r, dict) and "product_id" in r]
        if isinstance(rows, list)
        else []
    )


@dataclass
class ReadingModel:
    """The model server; ``async with`` it. ``requests`` holds (authorization, body) of each request."""

    requests: list[tuple[str | None, dict[str, Any]]] = field(default_factory=list)
    base_url: str = ""
    _serving: AsyncExitStack = field(default_factory=AsyncExitStack)

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def complete(request: Request) -> JSONResponse:
            body = await request.json()
            self.requests.append((request.headers.get("authorization"), body))
            messages = body.get("messages", [])
            turn = sum(1 for m in messages if m.get("role") == "assistant")
            name, arguments = _next_call(messages)
            call = {
                "id": f"call_{turn}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            message = {"role": "assistant", "content": f"Next I call {name}.", "tool_calls": [call]}
            return JSONResponse(
                {
                    "id": f"chatcmpl-{len(self.requests)}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "reading-model",
                    "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                    "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
                }
            )

        return app

    async def __aenter__(self) -> ReadingModel:
        url = await self._serving.enter_async_context(serve_app(self.app(), force_exit=True))
        self.base_url = f"{url}/v1"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._serving.aclose()
