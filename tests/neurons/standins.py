"""What the wire tests run against: TaskRequests, a minimal tool server, tiny agents, loopback servers.

The tool server here implements only the tool server's HTTP contract (``POST /v1/tools/{name}``
with a bearer token and ``X-Arena-Call-Id``, answering ``{call_id, tool, content, error, seq}``),
recording every call so tests can see what the miner sent.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import uvicorn
from fastapi import FastAPI, Header, HTTPException, Request

from arena.types import FunctionCall, Message, ToolCall, Usage
from neurons.agents import AgentOutput, AgentRequest, ToolCaller
from neurons.protocol import PROTOCOL_VERSION, TaskBudgets, TaskRequest

TOKEN = "episode-token-1"
TOOLS: tuple[dict[str, Any], ...] = (
    {
        "type": "function",
        "function": {
            "name": "find_product",
            "description": "Search the catalog.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
        },
    },
)


def task_request(
    *,
    tool_server_url: str = "http://tools.invalid",
    seconds: float = 30.0,
    episode_id: str = "ep-1",
    task_id: str = "t-1",
    max_tool_calls: int = 10,
    max_response_bytes: int = 1024 * 1024,
    **changes: Any,
) -> TaskRequest:
    values: dict[str, Any] = {
        "protocol_version": PROTOCOL_VERSION,
        "episode_id": episode_id,
        "task_id": task_id,
        "query": "a red kettle under 30 dollars",
        "tool_server_url": tool_server_url,
        "episode_token": TOKEN,
        "tools": TOOLS,
        "toolset": "sb-1",
        "deadline": datetime.now(UTC) + timedelta(seconds=seconds),
        "budgets": TaskBudgets(
            max_tool_calls=max_tool_calls, max_seconds=seconds, max_response_bytes=max_response_bytes
        ),
    }
    values.update(changes)
    return TaskRequest(**values)


@dataclass
class ToolServer:
    """A stand-in tool server: checks the bearer token, records calls, answers with a JSON string."""

    token: str = TOKEN
    calls: list[dict[str, Any]] = field(default_factory=list)

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/tools/{name}")
        async def call(
            name: str,
            request: Request,
            authorization: str | None = Header(default=None),
            x_arena_call_id: str | None = Header(default=None),
        ) -> dict[str, Any]:
            if authorization != f"Bearer {self.token}":
                raise HTTPException(401, "bad token")
            arguments = json.loads(await request.body())
            self.calls.append({"tool": name, "arguments": arguments, "call_id": x_arena_call_id})
            content = json.dumps([{"product_id": "p1", "title": f"result for {arguments.get('q')}"}])
            return {
                "call_id": x_arena_call_id,
                "tool": name,
                "content": content,
                "error": False,
                "seq": len(self.calls) - 1,
            }

        return app


async def tool_agent(request: AgentRequest, call_tool: ToolCaller, *, calls: int = 1) -> AgentOutput:
    """A tiny agent: ``calls`` searches through the tool caller, then a recommendation in text."""
    messages = [
        Message(role="system", content="You are a shopping assistant."),
        Message(role="user", content=request.query),
    ]
    for step in range(calls):
        call_id = f"call_{step}"
        arguments = {"q": request.query}
        messages.append(
            Message(
                role="assistant",
                tool_calls=(
                    ToolCall(
                        id=call_id,
                        function=FunctionCall(name="find_product", arguments=json.dumps(arguments)),
                    ),
                ),
            )
        )
        result = await call_tool("find_product", arguments, call_id)
        messages.append(Message(role="tool", tool_call_id=call_id, content=result.content))
    messages.append(Message(role="assistant", content="I recommend p1."))
    return AgentOutput(messages=messages, usage=Usage(prompt_tokens=10, completion_tokens=5))


async def noop_agent(request: AgentRequest, call_tool: ToolCaller) -> AgentOutput:
    """An agent that answers at once without calling tools."""
    return AgentOutput(
        messages=[Message(role="user", content=request.query), Message(role="assistant", content="none")]
    )


def free_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@asynccontextmanager
async def serve_app(app: FastAPI, sock: socket.socket | None = None) -> AsyncIterator[str]:
    """Run ``app`` under uvicorn on a loopback port in this event loop; yields its base URL."""
    sock = sock or free_socket()
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, lifespan="on", access_log=False))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
        sock.close()
