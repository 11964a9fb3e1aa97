"""The neurons' flags agree with their settings fields: help, default, variable, and the docs' flags."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
from pydantic import BaseModel

from neurons.cli import ArenaGroup
from neurons.cli.evaluate import EVAL_FLAGS
from neurons.cli.flags import (
    NEURON_FLAGS,
    Flag,
    env_name,
    field_of,
    flag_help,
    flag_type,
    overrides,
    settings_variables,
    with_flags,
)
from neurons.cli.lazy import load_command
from neurons.cli.miner import MINER_FLAGS
from neurons.cli.validator import VALIDATOR_FLAGS
from neurons.evaluation.settings import EvalSettings
from neurons.miner.settings import MinerSettings
from neurons.validator.settings import ValidatorSettings

ROOT = Path(__file__).resolve().parents[3]
DOCS = {"validator": ROOT / "docs" / "validator.md", "miner": ROOT / "docs" / "protocol.md"}
COMMANDS: dict[str, tuple[type[BaseModel], tuple[Flag, ...], set[str]]] = {
    # command -> its settings, its flags, and its options that are not settings
    "validator": (ValidatorSettings, VALIDATOR_FLAGS, {"once", "json_output"}),
    "miner": (MinerSettings, MINER_FLAGS, set()),
}
# `arena eval`'s settings are its flags only (no ARENA_* variables); its other options are the run's.
EVAL_OWN = {"ctx", "index", "tasks", "pool", "out", "as_json", "agent_option", "judge_url", "judge_model"}
EVAL_OWN |= {"judge_format", "train_manifest", "limit", "resamples", "db", "upgrade_db", "world"}


def disagreements(
    command: Any, settings: type[BaseModel], flags: tuple[Flag, ...], own: set[str]
) -> list[str]:
    """Where a built command's options disagree with the settings fields they stand for."""
    by_param = {flag.param: flag for flag in flags}
    found = []
    for param in command.params:
        if param.name == "help" or param.name in own:
            continue
        flag = by_param.get(param.name)
        if flag is None:
            found.append(f"--{param.name}: no settings field")
            continue
        field = field_of(settings, flag.path)
        if param.default is not None:
            found.append(f"{flag.path}: default {param.default!r}, not None (the variable would lose)")
        if param.help != flag_help(settings, flag) or (field.description or "") not in (param.help or ""):
            found.append(f"{flag.path}: help {param.help!r} is not the field's")
    missing = set(by_param) - {param.name for param in command.params}
    found += [f"{by_param[name].path}: no option" for name in sorted(missing)]
    return found


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_option_is_its_settings_field(name: str) -> None:
    settings, flags, own = COMMANDS[name]
    command = load_command(name, ArenaGroup.lazy_commands[name])
    assert disagreements(command, settings, flags, own) == []


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_flag_names_a_documented_field_and_its_variable(name: str) -> None:
    settings, flags, _ = COMMANDS[name]
    for flag in flags:
        field = field_of(settings, flag.path)
        assert field.description, f"{flag.path} has no description for its help"
        assert env_name(settings, flag.path) in flag_help(settings, flag)
    assert {f.path for f in NEURON_FLAGS} <= {f.path for f in flags}  # chain, wallet, host, logs


def test_every_eval_option_that_is_a_setting_is_its_field() -> None:
    command = load_command("eval", ArenaGroup.lazy_commands["eval"])
    assert disagreements(command, EvalSettings, EVAL_FLAGS, EVAL_OWN) == []
    for flag in EVAL_FLAGS:
        assert field_of(EvalSettings, flag.path).description, f"{flag.path} has no description"
        assert "Env " not in flag_help(EvalSettings, flag)  # no variable sets it
    assert flag_help(EvalSettings, Flag("k")) == "Samples per task. Default 8."


def test_the_checker_catches_a_hand_written_option_that_drifted() -> None:
    flags = (Flag("round.tasks_per_round"), Flag("round.miners_per_round"))

    def drifted(
        round__tasks_per_round: Annotated[int, typer.Option(help="Tasks per round (4).")] = 4,
    ) -> None: ...

    app = typer.Typer(add_completion=False)
    app.command()(drifted)
    command = typer.main.get_command(app)
    found = disagreements(command, ValidatorSettings, flags, set())
    assert any("default 4" in line for line in found)
    assert any("help" in line for line in found)
    assert "round.miners_per_round: no option" in found

    def generated(**given: Any) -> None: ...

    app = typer.Typer(add_completion=False)
    app.command()(with_flags(generated, ValidatorSettings, flags))
    assert disagreements(typer.main.get_command(app), ValidatorSettings, flags, set()) == []


def _documented_invocations() -> list[tuple[str, str, str]]:
    """(file, command, flags) of each `arena validator|miner ...` line in the docs (continuations joined)."""
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8").replace("\\\n", " ")
        for match in re.finditer(r"^\s*arena (validator|miner)( [^\n`|]*)$", text, re.M):
            found.append((path.name, match.group(1), match.group(2)))
    return found


def test_every_flag_the_docs_use_exists() -> None:
    invocations = _documented_invocations()
    assert len(invocations) >= 4
    for file, name, text in invocations:
        command = load_command(name, ArenaGroup.lazy_commands[name])
        known = {opt for param in command.params for opt in [*param.opts, *param.secondary_opts]}
        for used in re.findall(r"(?<!\S)--[a-z][a-z-]*", text):
            assert used in known, f"{file}: arena {name} {used} is not a flag"


def test_overrides_nest_sections_and_drop_absent_flags() -> None:
    flags = (
        Flag("netuid"),
        Flag("round.tasks_per_round"),
        Flag("judge.base_url", "--judge-url"),
        Flag("host"),
    )
    given = {"netuid": 3, "round__tasks_per_round": 5, "judge__base_url": "http://j/v1", "host": None}
    assert overrides(given, flags) == {
        "netuid": 3,
        "round": {"tasks_per_round": 5},
        "judge": {"base_url": "http://j/v1"},
    }
    assert Flag("serve_on_chain", "--serve").option(True) == "--serve/--no-serve"
    assert Flag("round.tasks_per_round").option(False) == "--tasks-per-round"


@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_settings_table_lists_every_variable_with_its_flag(name: str) -> None:
    settings, flags, _ = COMMANDS[name]
    rows = [
        line for line in DOCS[name].read_text(encoding="utf-8").splitlines() if line.startswith("| `ARENA_")
    ]
    missing = [v for v in settings_variables(settings) if not any(f"`{v}`" in row for row in rows)]
    assert missing == [], f"{DOCS[name].name} does not list {missing}"
    for flag in flags:
        variable = env_name(settings, flag.path)
        shown = flag.option(flag_type(field_of(settings, flag.path)) is bool).split("/")[0]
        # The row naming it in its first cell, else any that names it (``ARENA_LOCAL_CHAIN`` in a note).
        named = [row for row in rows if f"`{variable}`" in row.split(" | ")[0]]
        row = (named or [row for row in rows if f"`{variable}`" in row])[0]
        assert f"`{shown}" in row, f"{DOCS[name].name}: {variable}'s row does not name {shown}"
