"""`arena env`: the arena as an RL environment: sessions over HTTP (and OpenEnv), rollouts into data."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from arena.errors import ArenaError
from arena.index import SearchIndex, open_index
from neurons.cli.console import fail
from neurons.environment.errors import EnvError
from neurons.environment.rewards import TurnRewardConfig
from neurons.environment.session import EnvConfig, Environment
from neurons.environment.tasks import PACK_TOOLSET, EnvTasks, file_tasks, pack_tasks
from neurons.logs import setup_logging

logger = logging.getLogger(__name__)

app = typer.Typer(
    help="The arena as an RL environment: sessions with turn rewards (HTTP, OpenEnv), rollouts into data.",
    no_args_is_help=True,
    add_completion=False,
)

IndexOption = Annotated[Path, typer.Option("--index", help="Base search index (arena catalog build).")]
WorldOption = Annotated[
    Path | None, typer.Option("--world", help="World pack directory (arena world compile over --index).")
]
TasksOption = Annotated[
    Path | None, typer.Option("--tasks", help="Task file (JSONL) over --index, without a world.")
]
ToolsetOption = Annotated[
    str | None, typer.Option("--toolset", help="Tool set offered: arena-3 for a world, sb-1 for a task file.")
]


def open_tasks(index: Path, world: Path | None, tasks: Path | None, toolset: str | None) -> EnvTasks:
    """The tasks of ``--world`` (a pack over ``--index``) or ``--tasks``; a bad input fails the command."""
    if (world is None) == (tasks is None):
        fail("give --world (a pack) or --tasks (a task file), one of them")
    try:
        base: SearchIndex = open_index(index)
    except ArenaError as exc:
        fail(f"--index: {exc}")
    try:
        if world is not None:
            return pack_tasks(world, base, toolset=toolset or PACK_TOOLSET)
        if tasks is not None:
            return file_tasks(tasks, base, toolset=toolset) if toolset else file_tasks(tasks, base)
    except (ArenaError, EnvError) as exc:
        fail(str(exc))
    fail("give --world (a pack) or --tasks (a task file)")


@app.command()
def serve(
    index: IndexOption,
    world: WorldOption = None,
    tasks: TasksOption = None,
    toolset: ToolsetOption = None,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port to listen on.")] = 8700,
    max_steps: Annotated[int, typer.Option(min=1, help="Tool calls per session.")] = EnvConfig.max_steps,
    max_seconds: Annotated[
        float, typer.Option(min=1.0, help="Wall time per session, in seconds.")
    ] = EnvConfig.max_seconds,
    max_sessions: Annotated[int, typer.Option(min=1, help="Sessions open at once.")] = EnvConfig.max_sessions,
    turn_rewards: Annotated[
        bool, typer.Option(help="Turn rewards from the judge's checks (off: the final score only).")
    ] = True,
    openenv: Annotated[
        bool, typer.Option("--openenv", help="Also speak OpenEnv's interface (/reset, /step, /state, /ws).")
    ] = False,
    log_level: Annotated[str, typer.Option(help="DEBUG, INFO, WARNING or ERROR.")] = "INFO",
) -> None:
    """Serve environment sessions over HTTP: reset a task, step one tool call at a time, read the state.

    The tools, the shopper, the world's changes and the judge are the validator's; each step returns
    the tool's result, a turn reward and whether the episode is over, and the last one the
    validator's score (docs/environment.md). --openenv adds OpenEnv's routes (the `openenv` extra).

    Example: arena env serve --index data/index --world worlds/round-42 --port 8700 --openenv
    """
    import uvicorn

    from neurons.environment.server import create_env_app
    from neurons.serving import uvicorn_options

    env_tasks = open_tasks(index, world, tasks, toolset)
    try:
        config = EnvConfig(
            max_steps=max_steps,
            max_seconds=max_seconds,
            max_sessions=max_sessions,
            rewards=TurnRewardConfig(enabled=turn_rewards),
        )
    except ValueError as exc:
        fail(str(exc))
    env = Environment(env_tasks, config)
    setup_logging(log_level)
    server = create_env_app(env)
    if openenv:
        try:
            from neurons.environment.openenv import mount_openenv
        except ImportError as exc:
            fail(f"--openenv needs the openenv extra (pip install 'shopping-arena[openenv]'): {exc}")
        mount_openenv(server, env)
    logger.info(
        "env_server url=http://%s:%d tasks=%d toolset=%s world=%s openenv=%s",
        host, port, len(env_tasks.tasks), env_tasks.toolset, env_tasks.world_id, openenv,
    )  # fmt: skip
    uvicorn.run(server, host=host, port=port, log_config=None, access_log=False, **uvicorn_options())
