"""The environment over HTTP (`arena env serve`): reset, step, state, finish, the log; JSON in, JSON out.

Routes (bodies are the models of ``neurons.environment.types``)::

    GET    /health                          the tasks, the tool set, the world, open sessions
    GET    /v1/env/tasks                    the task ids a reset may name
    POST   /v1/env/reset                    ResetRequest -> Reset              (404 unknown task, 503 full)
    POST   /v1/env/sessions/{id}/step       Action -> StepOutcome              (404 unknown session)
    POST   /v1/env/sessions/{id}/finish     {"messages": [...]}? -> Final      (the agent's own transcript)
    GET    /v1/env/sessions/{id}            SessionState
    GET    /v1/env/sessions/{id}/log        the session's tool log
    DELETE /v1/env/sessions/{id}            forget the session
    GET    /metrics                         Prometheus

A step runs in a worker thread (a search over a large world is CPU work). An agent's fault is a
tool error inside a 200 answer; 4xx answers are for requests the environment cannot serve.
Bodies are capped and must be JSON, as on the tool server.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from fastapi import FastAPI, HTTPException, Request, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from arena.toolcalls import Limits
from arena.toolserver import add_error_handlers, read_capped_body, short_validation_message
from arena.types import Frozen, Message
from neurons.environment.errors import EnvFull, UnknownSession, UnknownTask
from neurons.environment.session import Environment
from neurons.environment.types import Action, Final, Reset, ResetRequest, SessionState, StepOutcome
from neurons.metrics import render_latest

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")
# Steps run on a few threads, not one per request: a search is CPU work under the GIL, and 32
# threads contending for it starve the event loop (measured: p99 of a step 6.8 s at 32 sessions).
STEP_WORKERS = 4
# A finish may carry the agent's whole transcript: more than a step, less than a miner's reply cap.
FINISH_BODY_BYTES = 4 * 2**20


class FinishRequest(Frozen):
    """Optional body of a finish: the agent's own transcript, judged against the log in place of ours."""

    messages: tuple[Message, ...] | None = Field(default=None, min_length=1)


class _Health(BaseModel):
    model_config = ConfigDict(frozen=True)

    status: str
    tasks: int
    toolset: str
    world_id: str | None
    open_sessions: int
    max_sessions: int


async def _read(request: Request, model: type[M], limits: Limits) -> M:
    """The request body as ``model`` (an empty body is the model's defaults); 413/415/422 otherwise."""
    body = await read_capped_body(request, limits)
    try:
        return model.model_validate_json(body) if body.strip() else model()
    except ValidationError as exc:
        raise HTTPException(422, short_validation_message(exc.errors(include_url=False))) from None


def create_env_app(env: Environment, *, limits: Limits | None = None, workers: int = STEP_WORKERS) -> FastAPI:
    """Build the environment's HTTP app over ``env`` (one process holds its sessions).

    ``workers``: the threads steps run on (the rest of a request stays on the event loop).
    """
    limits = limits or Limits()
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="env-step")

    async def off_loop(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(
            pool, functools.partial(function, *args, **kwargs)
        )

    finish_limits = Limits(max_body_bytes=max(limits.max_body_bytes, FINISH_BODY_BYTES))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        pool.shutdown(wait=False, cancel_futures=True)

    app = FastAPI(title="Shopping Arena environment", docs_url=None, redoc_url=None, lifespan=lifespan)
    add_error_handlers(app)

    def missing(exc: UnknownSession | UnknownTask) -> HTTPException:
        return HTTPException(404, str(exc))

    @app.get("/health")
    async def health() -> _Health:
        return _Health(
            status="ok",
            tasks=len(env.tasks.tasks),
            toolset=env.tasks.toolset,
            world_id=env.tasks.world_id,
            open_sessions=env.open_sessions,
            max_sessions=env.config.max_sessions,
        )

    @app.get("/v1/env/tasks")
    async def tasks() -> dict[str, Any]:
        return {"task_ids": [task.task_id for task in env.tasks.tasks], "world_id": env.tasks.world_id}

    @app.post("/v1/env/reset")
    async def reset(request: Request) -> Reset:
        asked = await _read(request, ResetRequest, limits)
        try:
            return await off_loop(env.reset, task_id=asked.task_id, seed=asked.seed, system=asked.system)
        except UnknownTask as exc:
            raise missing(exc) from None
        except EnvFull as exc:
            raise HTTPException(503, str(exc), headers={"Retry-After": "1"}) from None

    @app.post("/v1/env/sessions/{session_id}/step")
    async def step(session_id: str, request: Request) -> StepOutcome:
        action = await _read(request, Action, limits)
        try:
            return await off_loop(env.step, session_id, action)
        except UnknownSession as exc:
            raise missing(exc) from None

    @app.post("/v1/env/sessions/{session_id}/finish")
    async def finish(session_id: str, request: Request) -> Final:
        asked = await _read(request, FinishRequest, finish_limits)
        try:
            return await off_loop(env.finish, session_id, asked.messages)
        except UnknownSession as exc:
            raise missing(exc) from None

    @app.get("/v1/env/sessions/{session_id}")
    async def state(session_id: str) -> SessionState:
        try:
            return env.state(session_id)
        except UnknownSession as exc:
            raise missing(exc) from None

    @app.get("/v1/env/sessions/{session_id}/log")
    async def log(session_id: str) -> dict[str, Any]:
        try:
            entries = env.log(session_id)
        except UnknownSession as exc:
            raise missing(exc) from None
        return {"session_id": session_id, "entries": [e.model_dump(mode="json") for e in entries]}

    @app.delete("/v1/env/sessions/{session_id}", status_code=204)
    async def close(session_id: str) -> Response:
        try:
            await off_loop(env.close, session_id)
        except UnknownSession as exc:
            raise missing(exc) from None
        return Response(status_code=204)

    @app.get("/metrics")
    async def metrics() -> Response:
        body, content_type = render_latest()
        return Response(body, media_type=content_type)

    return app
