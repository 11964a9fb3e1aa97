"""OpenEnv's interface over the environment (the ``openenv`` extra): Environment, Action, Observation, State.

OpenEnv (``pip install 'shopping-arena[openenv]'``, package ``openenv``) serves an environment as
a session server: each WebSocket session (``/ws``, what ``openenv.core.EnvClient`` speaks) gets
its own :class:`ArenaOpenEnv`, whose ``reset(seed, episode_id, task_id=..., system=...)`` opens a
session of the shared :class:`~neurons.environment.session.Environment` and whose ``step`` runs
one tool call in it; the observation carries the tool's result, the turn reward (``reward``),
its parts and ``done``, and on the last step the validator's score (``final``). A client's
``episode_id`` is not used: the session id is the episode's (``state.episode_id``).

:func:`mount_openenv` adds OpenEnv's app (``/reset``, ``/step``, ``/state``, ``/schema``,
``/health``, ``/ws``) under ``/openenv`` of ``arena env serve``'s app, bounded by the
environment's ``max_sessions``. This module imports ``openenv``: import it only where the extra
is wanted (``arena env serve --openenv``).
"""

from __future__ import annotations

import functools
from typing import Any

from fastapi import FastAPI
from openenv.core.env_server import Action, Observation, State, create_fastapi_app
from openenv.core.env_server import Environment as OpenEnvEnvironment
from pydantic import Field

from arena.tools.tool import error_result
from neurons.environment.errors import UnknownSession
from neurons.environment.session import Environment
from neurons.environment.types import MAX_CONTENT_CHARS
from neurons.environment.types import Action as ArenaStep

OPENENV_PATH = "/openenv"
ENV_NAME = "shopping_arena"


class ArenaAction(Action):  # type: ignore[misc]  # openenv is typed as Any (an optional extra)
    """One tool call and the assistant's text that came with it (``neurons.environment.types.Action``)."""

    tool: str = Field(max_length=128)
    arguments: str | dict[str, Any] = "{}"
    call_id: str | None = Field(default=None, min_length=1, max_length=64)
    content: str | None = Field(default=None, max_length=MAX_CONTENT_CHARS)
    reasoning: str | None = Field(default=None, max_length=MAX_CONTENT_CHARS)


class ArenaObservation(Observation):  # type: ignore[misc]
    """After a reset: the request and the tools; after a step: the result and the turn reward's parts."""

    session_id: str = ""
    task_id: str = ""
    request: str = ""
    tools: list[dict[str, Any]] = Field(default_factory=list)
    result: str = ""
    error: bool = False
    reward_parts: dict[str, float] = Field(default_factory=dict)
    final: dict[str, Any] | None = None


class ArenaState(State):  # type: ignore[misc]
    """The session as it stands (``episode_id`` is the session id, ``step_count`` its calls)."""

    task_id: str | None = None
    total_reward: float = 0.0
    done: bool = False
    end: str | None = None
    world_id: str | None = None


class ArenaOpenEnv(OpenEnvEnvironment):  # type: ignore[misc]
    """One OpenEnv session: a session of the shared environment at a time (a reset closes the last)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, env: Environment) -> None:
        """Bind to the shared environment (OpenEnv builds one per WebSocket session)."""
        super().__init__()
        self._env = env
        self._session: str | None = None

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task_id: str | None = None,
        system: str | None = None,
        **kwargs: Any,
    ) -> ArenaObservation:
        """Open a session on a task (by ``task_id``, else ``seed``, else at random); ``episode_id`` unused."""
        del episode_id, kwargs
        self.close()
        reset = self._env.reset(task_id=task_id, seed=seed, system=system)
        self._session = reset.session_id
        return ArenaObservation(
            session_id=reset.session_id,
            task_id=reset.task_id,
            request=reset.request,
            tools=list(reset.tools),
            reward=0.0,
            metadata={"toolset": reset.toolset, "max_steps": reset.max_steps, "world_id": reset.world_id},
        )

    def step(self, action: ArenaAction, timeout_s: float | None = None, **kwargs: Any) -> ArenaObservation:
        """Run one tool call; a step before any reset is a tool error that ends nothing."""
        del timeout_s, kwargs
        if self._session is None:
            refused = error_result("no session: reset first")
            return ArenaObservation(result=refused.content, error=True, reward=0.0, done=True)
        step = ArenaStep(**action.model_dump(exclude={"metadata"}))
        outcome = self._env.step(self._session, step)
        return ArenaObservation(
            session_id=outcome.session_id,
            task_id=self._env.task(outcome.session_id).task_id,
            result=outcome.result,
            error=outcome.error,
            reward=outcome.reward,
            reward_parts=outcome.reward_parts,
            done=outcome.done,
            final=outcome.final.model_dump(mode="json") if outcome.final is not None else None,
        )

    @property
    def state(self) -> ArenaState:
        """The current session's state (an empty state before the first reset)."""
        if self._session is None:
            return ArenaState()
        state = self._env.state(self._session)
        return ArenaState(
            episode_id=state.session_id,
            step_count=state.steps,
            task_id=state.task_id,
            total_reward=state.total_reward,
            done=state.done,
            end=state.end,
            world_id=state.world_id,
        )

    def close(self) -> None:
        """Forget the current session (finishing it if it is open), freeing its slot."""
        if self._session is not None:
            try:
                self._env.close(self._session)
            except UnknownSession:
                pass  # already expired and evicted
            self._session = None


def openenv_app(env: Environment) -> FastAPI:
    """OpenEnv's FastAPI app over ``env`` (one ``ArenaOpenEnv`` per WebSocket session)."""
    app: FastAPI = create_fastapi_app(
        functools.partial(ArenaOpenEnv, env),
        ArenaAction,
        ArenaObservation,
        max_concurrent_envs=env.config.max_sessions,
        env_name=ENV_NAME,
        state_cls=ArenaState,
    )
    return app


def mount_openenv(app: FastAPI, env: Environment) -> None:
    """Serve OpenEnv's interface over ``env`` under ``/openenv`` of ``app``."""
    app.mount(OPENENV_PATH, openenv_app(env))
