"""`arena validator`: run a validator (tool server, rounds, judging, weights) on finney, test or local."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from neurons.cli.flags import NEURON_FLAGS, Flag, overrides, with_flags
from neurons.validator.settings import ValidatorSettings

# The settings with a flag; every other one is an ARENA_* variable only (docs/validator.md).
VALIDATOR_FLAGS = (
    *NEURON_FLAGS,
    Flag("data_dir"),
    Flag("db_url"),
    Flag("db_upgrade", "--upgrade-db"),
    Flag("index"),
    Flag("catalog"),
    Flag("judge.base_url", "--judge-url"),
    Flag("judge.model", "--judge-model"),
    Flag("toolserver_url"),
    Flag("round_interval"),
    Flag("round.tasks_per_round"),
    Flag("round.miners_per_round"),
)


def validator(
    once: Annotated[
        bool, typer.Option("--once", help="Run one task rotation, one round and one weights pass, then exit.")
    ] = False,
    json_output: Annotated[
        bool, typer.Option("--json", help="With --once: print what the round and weights pass did as JSON.")
    ] = False,
    **given: Any,
) -> None:
    """Run a validator: host the tools, query miners in rounds, judge, store, and set weights.

    Flags override ARENA_* environment variables (and .env); secrets (ARENA_TOKEN_SECRET,
    ARENA_JUDGE__API_KEY, a database URL with a password) are best given in the environment.
    Every other setting (episode budgets, client bounds, weights policy, task rotation) is an
    ARENA_* variable: see docs/validator.md. Exits 2 on invalid settings, 1 when the chain or
    database is unreachable at start or (with --once) when a job failed.

    Example: arena validator --network local --local-chain chain.db --netuid 1 --wallet-name validator --once
    """
    from neurons.validator.process import main  # the SDK and the app load only when the command runs

    main(overrides(given, VALIDATOR_FLAGS), once=once, json_output=json_output)


with_flags(validator, ValidatorSettings, VALIDATOR_FLAGS)
