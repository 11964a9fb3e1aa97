"""`arena env`: the arena as an RL environment: sessions over HTTP (and OpenEnv), rollouts into data."""

from __future__ import annotations

import logging
from contextlib import AbstractAsyncContextManager, nullcontext
from pathlib import Path
from typing import Annotated, Any

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


@app.command()
def rollouts(
    index: IndexOption,
    out: Annotated[Path, typer.Option("--out", help="Run directory: rollouts.db, samples.jsonl, export/.")],
    world: WorldOption = None,
    tasks: TasksOption = None,
    toolset: ToolsetOption = None,
    k: Annotated[int, typer.Option(min=1, help="Episodes sampled per task.")] = 4,
    agent: Annotated[
        str | None, typer.Option("--agent", help="A Python policy: scripted, or package.module:function.")
    ] = None,
    model_url: Annotated[
        str | None, typer.Option(help="An OpenAI-compatible endpoint (with --model).")
    ] = None,
    model: Annotated[str | None, typer.Option(help="The model name the endpoint serves.")] = None,
    gguf: Annotated[Path | None, typer.Option(help="A GGUF to serve with the local model server.")] = None,
    weights_hash: Annotated[
        str | None,
        typer.Option(help="The endpoint's weights hash, recorded in every row (a GGUF's is computed)."),
    ] = None,
    temperature: Annotated[
        float, typer.Option(min=0.0, help="Sampling temperature of a model policy.")
    ] = 0.7,
    max_tasks: Annotated[int | None, typer.Option(min=1, help="Only the first N tasks.")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Episodes played at once.")] = 1,
    max_steps: Annotated[int, typer.Option(min=1, help="Model turns per episode.")] = 20,
    max_tool_calls: Annotated[
        int, typer.Option(min=1, help="Tool calls per episode (the session's step budget).")
    ] = EnvConfig.max_steps,
    deadline: Annotated[float, typer.Option(min=1.0, help="Seconds an episode may take.")] = 300.0,
    eval_share: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Share of leak clusters in eval.")
    ] = 0.1,
    seed: Annotated[int, typer.Option(help="Base of the per-sample sampling seeds.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Sample k episodes per task from a policy in the environment; write verified successes as data.

    Each episode is judged as the validator judges it and stored (OUT/rollouts.db, validator schema);
    curation's funnel then writes OUT/export: SFT rows of the successes, KTO rows of every kept
    trace (failures labelled false), origin rollout, with the policy, its weights' hash and k.
    A rerun resumes. One policy: --agent, or --model-url and --model, or --gguf.

    Example: arena env rollouts --index data/index --world worlds/round-42 --gguf tuned.gguf --k 8 --out rs
    """
    import asyncio
    import json

    from neurons.environment import rollouts as runs

    chosen = [agent is not None, model_url is not None or model is not None, gguf is not None]
    if sum(chosen) != 1 or (chosen[1] and not (model_url and model)):
        fail("give one policy: --agent, or --model-url and --model, or --gguf")
    if gguf is not None and not gguf.is_file():
        fail(f"--gguf: no file at {gguf}")
    env_tasks = open_tasks(index, world, tasks, toolset)
    config = EnvConfig(max_steps=max_tool_calls, max_sessions=concurrency, hotkey=runs.ROLLOUT_HOTKEY)
    env = Environment(env_tasks, config)
    selected = list(env_tasks.tasks[:max_tasks] if max_tasks else env_tasks.tasks)
    engine, sessions = runs.open_store(out)

    async def sample() -> tuple[runs.Policy, list[runs.RolloutRecord]]:
        async with _policy(agent, model_url, model, gguf, weights_hash, temperature) as policy:
            run = runs.RolloutRun(
                env, policy, k, out, sessions, max_steps=max_steps, deadline_s=deadline, seed=seed
            )
            return policy, await run.run(selected, concurrency=concurrency)

    try:
        policy, records = asyncio.run(sample())
        funnel = runs.export_run(sessions, out, policy, k, eval_share=eval_share)
    except (EnvError, ArenaError) as exc:
        fail(str(exc), code=1)
    finally:
        engine.dispose()
    report = runs.summary(records, k) | {"policy": policy.name, "weights_hash": policy.weights_hash}
    report["rows"] = funnel["exports"]
    if as_json:
        typer.echo(json.dumps(report, indent=2))
        return
    typer.echo(
        f"{report['episodes']} episodes, {report['tasks']} tasks, {report['successes']} verified successes: "
        f"pass@1 {report['pass@1']}, pass@{k} {report[f'pass@{k}']}"
    )
    for name, sides in report["rows"].items():
        typer.echo(f"{name:>5}: train {sides['train']:>6}  eval {sides['eval']:>6}")
    typer.echo(f"wrote {out / 'export'}")


def _policy(
    agent: str | None,
    model_url: str | None,
    model: str | None,
    gguf: Path | None,
    weights_hash: str | None,
    temperature: float,
) -> AbstractAsyncContextManager[Any]:
    """The policy the flags name (checked by the caller: exactly one of them)."""
    from neurons.environment import rollouts as runs
    from neurons.miner.agents.contract import AgentError

    if gguf is not None:
        return runs.gguf_policy(gguf, temperature=temperature)
    if model_url is not None and model is not None:
        return runs.model_policy(model_url, model, weights_hash=weights_hash, temperature=temperature)
    try:
        policy = runs.agent_policy(agent or "scripted", {})
    except AgentError as exc:
        fail(str(exc))
    return nullcontext(policy)
