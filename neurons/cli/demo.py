"""`arena demo`: the local network on embedded defaults: chain, validator, miners, LLM, rounds, export."""

from __future__ import annotations

import json
import os
import signal
import sys
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer
from pydantic import SecretStr

from neurons.cli.console import error, fail, note, stderr_console, stdout_console

DEFAULT_ROOT = Path(".arena/demo")


def _secret(*names: str) -> SecretStr | None:
    value = next((os.environ[name] for name in names if os.environ.get(name)), None)
    return SecretStr(value) if value else None


def _interrupt(signum: int, frame: FrameType | None) -> None:
    del frame
    raise KeyboardInterrupt(f"signal {signum}")


def demo(
    rounds: Annotated[int, typer.Option(min=1, help="Validator rounds to run.")] = 3,
    miners_per_agent: Annotated[
        int, typer.Option(min=1, max=16, help="Miners of each agent kind (scripted, llm, give_up).")
    ] = 1,
    workdir: Annotated[
        Path | None,
        typer.Option(help="A fresh directory for everything (default: .arena/demo/<timestamp>)."),
    ] = None,
    no_llm: Annotated[
        bool, typer.Option("--no-llm", help="No llm miners and no local model: scripted and give_up only.")
    ] = False,
    llm_base_url: Annotated[
        str | None,
        typer.Option(
            envvar="ARENA_LLM_BASE_URL",
            help="OpenAI-compatible endpoint for the llm miners instead of the embedded model "
            "(API key: ARENA_LLM_API_KEY).",
        ),
    ] = None,
    llm_model: Annotated[
        str | None,
        typer.Option(envvar="ARENA_LLM_MODEL", help="Its model (default: the first its /models lists)."),
    ] = None,
    judge_url: Annotated[
        str | None,
        typer.Option(
            envvar=["ARENA_JUDGE_BASE_URL", "ARENA_JUDGE__BASE_URL"],
            help="OpenAI-compatible endpoint of the reasoning judge (API key: ARENA_JUDGE__API_KEY); "
            "default none: reasoning unscored.",
        ),
    ] = None,
    judge_model: Annotated[
        str | None,
        typer.Option(
            envvar=["ARENA_JUDGE_MODEL", "ARENA_JUDGE__MODEL"],
            help="The judge's model (default: the first its /models lists).",
        ),
    ] = None,
    products: Annotated[int, typer.Option(min=100, help="Products in the synthetic catalog.")] = 3000,
    seed: Annotated[
        int, typer.Option(help="Seed of the catalog and of the validator's secret: same seed, same tasks.")
    ] = 0,
    catalog: Annotated[
        Path | None, typer.Option(help="Use this catalog (.jsonl/.jsonl.gz) instead of the synthetic one.")
    ] = None,
    tasks_per_round: Annotated[int, typer.Option(min=1, max=16, help="Tasks each miner gets per round.")] = 2,
    episode_seconds: Annotated[
        float | None,
        typer.Option(min=5.0, help="Time budget of one episode (default 60 s; 20 s with --no-llm)."),
    ] = None,
    max_steps: Annotated[int, typer.Option(min=2, max=30, help="Model turns per episode (llm miners).")] = 6,
    static_tasks: Annotated[
        bool,
        typer.Option(
            "--static-tasks", help="Rounds on the static held-out tasks instead of a chain-seeded world each."
        ),
    ] = False,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print one JSON object on stdout (progress stays on stderr).")
    ] = False,
) -> None:
    """Run the local network: chain, validator, miners, local LLM, a few rounds, weights, export.

    Creates a local chain in a fresh work dir, registers a validator and miners of three kinds
    (scripted: the axis-B baseline; llm: the embedded SmolLM2 model choosing every call, axis A;
    give_up: searches once and never answers), starts each as its own process, runs --rounds
    validator rounds (each followed by a weights pass and the curation export), stops everything
    and prints a per-miner table. See docs/demo.md. Exits 2 on bad input or a missing local model,
    1 when a part fails, 130 when interrupted.

    Example: arena demo --rounds 2 --json
    """
    from neurons.demo.config import DemoConfig
    from neurons.demo.local_llm import LocalLLMError
    from neurons.demo.network import DemoError, DemoInputError
    from neurons.demo.run import run_demo
    from neurons.demo.summary import export_table, summary_table
    from neurons.logs import setup_logging

    setup_logging("WARNING")
    root = workdir or DEFAULT_ROOT / datetime.now().strftime("%Y%m%d-%H%M%S")
    if catalog is not None and not catalog.is_file():
        fail(f"catalog file not found: {catalog}")
    config = DemoConfig(
        workdir=root.resolve(),
        rounds=rounds,
        miners_per_agent=miners_per_agent,
        llm=not no_llm,
        llm_base_url=llm_base_url or None,
        llm_model=llm_model or None,
        llm_api_key=_secret("ARENA_LLM_API_KEY"),
        judge_url=judge_url or None,
        judge_model=judge_model or None,
        judge_api_key=_secret("ARENA_JUDGE__API_KEY", "ARENA_JUDGE_API_KEY"),
        products=products,
        seed=seed,
        catalog=catalog.resolve() if catalog else None,
        tasks_per_round=tasks_per_round,
        episode_seconds=episode_seconds,
        max_steps=max_steps,
        worlds=not static_tasks,
    )
    note(f"arena demo: work dir {config.workdir}")
    err = stderr_console()
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        with err.status("starting", spinner="dots") as status:

            def say(line: str) -> None:
                err.print(line, markup=False)
                status.update(line)

            result = run_demo(config, say)
    except KeyboardInterrupt:
        note("interrupted: every process the demo started has been stopped")
        raise typer.Exit(130) from None
    except LocalLLMError as exc:
        fail(f"{exc} (or run with --no-llm, or --llm-base-url URL)")
    except DemoInputError as exc:
        fail(str(exc))
    except DemoError as exc:
        error(str(exc))
        note(f"logs: {config.workdir / 'logs'}")
        raise typer.Exit(1) from None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    out = err if json_output else stdout_console()
    out.print(summary_table(result.miners, rounds=result.rounds, worlds=result.worlds))
    out.print(export_table(result.exports))
    out.print(f"database: {result.database}\nexport:   {result.export}", markup=False)
    if json_output:
        sys.stdout.write(json.dumps(result.as_json(), sort_keys=True) + "\n")
