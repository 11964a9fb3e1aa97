"""The `arena` command line: one typer app, one module per command group."""

from __future__ import annotations

import typer

from neurons.cli import catalog, curate, demo, evaluate, judge, miner, tasks, tools, validator

app = typer.Typer(
    name="arena",
    help="Shopping Arena: a Bittensor subnet that judges shopping agents and curates their traces.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(catalog.app, name="catalog")
app.add_typer(tasks.app, name="tasks")
app.add_typer(tools.app, name="tools")
app.add_typer(evaluate.app, name="eval")
app.command(name="miner")(miner.miner)
app.command(name="validator")(validator.validator)
app.command(name="judge")(judge.judge_command)
app.command(name="demo")(demo.demo)
app.command(name="curate")(curate.curate)


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
