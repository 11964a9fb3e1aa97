"""The lazy root group: `arena --help` lists every command from its table, each loaded only when run."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from neurons.cli import ArenaGroup, app
from neurons.cli.lazy import load_command

runner = CliRunner()


@pytest.mark.parametrize("name", list(ArenaGroup.lazy_commands))
def test_the_listed_help_is_the_commands_own_first_line(name: str) -> None:
    command = load_command(name, ArenaGroup.lazy_commands[name])
    assert command.name == name
    own = (command.help or "").strip().splitlines()[0]
    assert ArenaGroup.lazy_commands[name].help == own


def test_help_lists_every_command_with_its_line_in_table_order() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0, result.output
    at = [result.output.index(f"\n│ {name} ") for name in [*ArenaGroup.lazy_commands, "version"]]
    assert at == sorted(at)
    for command in ArenaGroup.lazy_commands.values():
        assert command.help in result.output


def test_a_group_keeps_its_subcommands_and_a_function_is_one_command() -> None:
    tools = load_command("tools", ArenaGroup.lazy_commands["tools"])
    judge = load_command("judge", ArenaGroup.lazy_commands["judge"])
    assert "serve" in tools.list_commands(typer.Context(tools))  # type: ignore[attr-defined]
    assert not hasattr(judge, "list_commands")
    result = runner.invoke(app, ["tools", "serve", "--help"])
    assert result.exit_code == 0 and "--practice" in result.output


def test_a_mistyped_command_gets_a_suggestion() -> None:
    result = runner.invoke(app, ["judg"])
    assert result.exit_code == 2
    assert "Did you mean 'judge'" in result.output
