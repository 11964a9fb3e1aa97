"""The `arena` command line: one typer app whose commands each live in a module imported on first use.

``arena --help`` and ``arena version`` import no command module; ``arena judge`` imports only
``neurons.cli.judge`` and what it uses (``tests/neurons/cli/test_startup.py``).
"""

from __future__ import annotations

import typer

from neurons.cli.lazy import LazyCommand, LazyGroup


class ArenaGroup(LazyGroup):
    """The root group: every command but ``version``, by module, with the line ``arena --help`` shows."""

    lazy_commands = {
        "catalog": LazyCommand(
            "neurons.cli.catalog:app",
            "Make product catalogs (synthetic, or rebuilt from tasks) and index them.",
        ),
        "tasks": LazyCommand(
            "neurons.cli.tasks:app",
            "Shopping tasks: import, generate, leak clusters, pools, rotation, audit.",
        ),
        "tools": LazyCommand("neurons.cli.tools:app", "The agent tool server."),
        "world": LazyCommand(
            "neurons.cli.world:app",
            "World packs: compile a seeded world over a base index, show a pack's summary.",
        ),
        "eval": LazyCommand(
            "neurons.cli.evaluate:app",
            "Evaluate a model: k samples per held-out task, judged as the validator judges, with intervals.",
        ),
        "miner": LazyCommand(
            "neurons.cli.miner:miner",
            "Run a miner: serve the agent behind the signed /v1/tasks endpoint and advertise it on chain.",
        ),
        "validator": LazyCommand(
            "neurons.cli.validator:validator",
            "Run a validator: host the tools, query miners in rounds, judge, store, and set weights.",
        ),
        "judge": LazyCommand(
            "neurons.cli.judge:judge_command",
            "Judge one trajectory offline and print the verdict as one JSON object.",
        ),
        "demo": LazyCommand(
            "neurons.cli.demo:demo",
            "Run the local network: chain, validator, miners, local LLM, a few rounds, weights, export.",
        ),
        "curate": LazyCommand(
            "neurons.cli.curate:curate",
            "Curate judged traces into TRL training data: funnel, dedup, leak-safe train/eval split.",
        ),
        "env": LazyCommand(
            "neurons.cli.env:app",
            "The arena as an RL environment: sessions with turn rewards (HTTP, OpenEnv), rollouts into data.",
        ),
        "audit": LazyCommand(
            "neurons.cli.audit:audit_command",
            "Recompile a validator's revealed world round from the chain and re-judge what it published.",
        ),
        "convert": LazyCommand(
            "neurons.cli.convert:convert_command",
            "Convert judged traces into agentic trajectories: a rationale per call, re-judged.",
        ),
    }


app = typer.Typer(
    name="arena", cls=ArenaGroup, no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False
)


@app.callback()
def arena() -> None:
    """Shopping Arena: a Bittensor subnet that judges shopping agents and curates their traces."""


def main() -> None:
    """Run the `arena` command line."""
    app()


@app.command()
def version() -> None:
    """Print the installed version.

    Example: arena version
    """
    from importlib.metadata import version as package_version

    typer.echo(package_version("shopping-arena"))
