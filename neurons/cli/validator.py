"""`arena validator`: run a validator (tool server, rounds, judging, weights) on finney, test or local."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from neurons.cli.options import (
    Host,
    LocalChain,
    LogLevel,
    Netuid,
    Network,
    Str,
    WalletHotkey,
    WalletName,
    WalletPath,
)


def validator(
    network: Network = None,
    netuid: Netuid = None,
    wallet_name: WalletName = None,
    wallet_hotkey: WalletHotkey = None,
    wallet_path: WalletPath = None,
    local_chain: LocalChain = None,
    data_dir: Annotated[
        Path | None, typer.Option(help="State directory: SQLite database, index, secret (ARENA_DATA_DIR).")
    ] = None,
    db_url: Annotated[
        Str,
        typer.Option(help="Database URL, e.g. postgresql+psycopg://... (default: SQLite in the data dir)."),
    ] = None,
    upgrade_db: Annotated[
        bool, typer.Option("--upgrade-db", help="Migrate the database schema at start.")
    ] = False,
    index: Annotated[Path | None, typer.Option(help="Search index directory (ARENA_INDEX).")] = None,
    catalog: Annotated[
        Path | None, typer.Option(help="Catalog to build the index from when none is there (ARENA_CATALOG).")
    ] = None,
    judge_url: Annotated[
        Str, typer.Option(help="OpenAI-compatible judge endpoint (ARENA_JUDGE__BASE_URL); none: unscored.")
    ] = None,
    judge_model: Annotated[Str, typer.Option(help="Judge model name (ARENA_JUDGE__MODEL).")] = None,
    host: Host = None,
    port: Annotated[
        int | None, typer.Option(help="Port of the tool server, /health, /metrics (8092).")
    ] = None,
    toolserver_url: Annotated[
        Str, typer.Option(help="The tool server URL miners are sent (ARENA_TOOLSERVER_URL).")
    ] = None,
    round_interval: Annotated[float | None, typer.Option(help="Seconds between rounds (600).")] = None,
    tasks_per_round: Annotated[int | None, typer.Option(help="Tasks per round (4).")] = None,
    miners_per_round: Annotated[int | None, typer.Option(help="Miners per round, 0 for all (64).")] = None,
    once: Annotated[
        bool, typer.Option("--once", help="Run one task rotation, one round and one weights pass, then exit.")
    ] = False,
    json_output: Annotated[
        bool, typer.Option("--json", help="With --once: print what the round and weights pass did as JSON.")
    ] = False,
    log_level: LogLevel = None,
) -> None:
    """Run a validator: host the tools, query miners in rounds, judge, store, and set weights.

    Flags override ARENA_* environment variables (and .env); secrets (ARENA_TOKEN_SECRET,
    ARENA_JUDGE__API_KEY, a database URL with a password) are best given in the environment.
    Every other setting (episode budgets, weights policy, task rotation) is an ARENA_* variable:
    see docs/validator.md. Exits 2 on invalid settings, 1 when the chain or database is
    unreachable at start or (with --once) when a job failed.

    Example: arena validator --network local --local-chain chain.db --netuid 1 --wallet-name validator --once
    """
    given: dict[str, Any] = {
        "network": network,
        "netuid": netuid,
        "wallet_name": wallet_name,
        "wallet_hotkey": wallet_hotkey,
        "wallet_path": wallet_path,
        "local_chain": local_chain,
        "data_dir": data_dir,
        "db_url": db_url,
        "db_upgrade": True if upgrade_db else None,
        "index": index,
        "catalog": catalog,
        "host": host,
        "port": port,
        "toolserver_url": toolserver_url,
        "round_interval": round_interval,
        "tasks_per_round": tasks_per_round,
        "miners_per_round": miners_per_round,
        "log_level": log_level,
    }
    overrides = {name: value for name, value in given.items() if value is not None}
    judge = {name: value for name, value in (("base_url", judge_url), ("model", judge_model)) if value}
    if judge:
        overrides["judge"] = judge
    from neurons.validator.process import main  # the SDK and the app load only when the command runs

    main(overrides, once=once, json_output=json_output)
