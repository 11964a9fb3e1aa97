"""What the wire tests run against: TaskRequests, the real tool server and its episodes, tiny agents."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import uvicorn
from fastapi import FastAPI

from arena.episode import Budgets, EpisodeRegistry, EpisodeTokens
from arena.index import SearchIndex
from arena.tools import ToolContext, tool_schemas
from arena.toolserver import create_tool_app
from arena.types import FunctionCall, Message, ToolCall, ToolLogEntry, Usage
from neurons.miner.agents.contract import AgentOutput, AgentRequest, ToolCaller
from neurons.protocol import PROTOCOL_VERSION, TaskBudgets, TaskRequest

TOKEN = "episode-token-1"  # for requests whose agent never calls a tool
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
        "query": "running shoes for men",
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
class ToolWorld:
    """The real tool server (``arena.toolserver``) over the fixture catalog, with its episode registry."""

    index: SearchIndex
    registry: EpisodeRegistry = field(default_factory=lambda: EpisodeRegistry(EpisodeTokens(b"s" * 32)))

    def app(self) -> FastAPI:
        return create_tool_app(ToolContext(index=self.index), registry=self.registry)

    def request(
        self,
        miner_hotkey: str,
        *,
        tool_server_url: str,
        server_calls: int = 20,
        seconds: float = 30.0,
        task_id: str = "t-1",
        **changes: Any,
    ) -> TaskRequest:
        """Open an episode for ``miner_hotkey`` (the server allows ``server_calls``) and build its request."""
        episode_id, token = self.registry.open_episode(task_id, miner_hotkey, Budgets(server_calls, seconds))
        changes.setdefault("tools", tuple(tool_schemas()))
        return task_request(
            tool_server_url=tool_server_url,
            seconds=seconds,
            episode_id=episode_id,
            task_id=task_id,
            episode_token=token,
            **changes,
        )

    def log(self, episode_id: str) -> list[ToolLogEntry]:
        return self.registry.log(episode_id)


async def tool_agent(request: AgentRequest, call_tool: ToolCaller, *, calls: int = 1) -> AgentOutput:
    """A tiny agent: ``calls`` searches through the tool caller, then a recommendation in text."""
    messages = [
        Message(role="system", content="You are a shopping assistant."),
        Message(role="user", content=request.query),
    ]
    for step in range(calls):
        call_id = f"call_{step}"
        arguments: dict[str, Any] = {"q": request.query, "page": 1}
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
async def serve_app(
    app: FastAPI, sock: socket.socket | None = None, *, force_exit: bool = False
) -> AsyncIterator[str]:
    """Run ``app`` under uvicorn on a loopback port in this event loop; yields its base URL.

    ``force_exit`` stops without waiting for requests still in flight (a scripted slow reply).
    """
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
        server.force_exit = force_exit
        await task
        sock.close()


@contextmanager
def serve_app_in_thread(app: FastAPI) -> Iterator[str]:
    """Run ``app`` under uvicorn in a thread with its own event loop; yields its base URL.

    For code under test that runs its own loop or process. Stops without waiting for requests
    still in flight.
    """
    sock = free_socket()
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, lifespan="on", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("the loopback server did not start")
            threading.Event().wait(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        server.force_exit = True
        thread.join(timeout=10)
        sock.close()
