"""`arena miner`: run a miner (its agent behind the signed ``/v1/tasks`` endpoint)."""

from __future__ import annotations

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


def miner(
    network: Network = None,
    netuid: Netuid = None,
    wallet_name: WalletName = None,
    wallet_hotkey: WalletHotkey = None,
    wallet_path: WalletPath = None,
    local_chain: LocalChain = None,
    agent: Annotated[Str, typer.Option(help="llm, scripted or package.module:function.")] = None,
    llm_base_url: Annotated[
        Str, typer.Option(help="OpenAI-compatible endpoint of the llm agent (env ARENA_LLM_BASE_URL).")
    ] = None,
    llm_model: Annotated[Str, typer.Option(help="Model of the llm agent (env ARENA_LLM_MODEL).")] = None,
    host: Host = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on (default 8091).")] = None,
    external_ip: Annotated[
        Str, typer.Option(help="IP advertised on chain (default: --host; 127.0.0.1 locally).")
    ] = None,
    workers: Annotated[int | None, typer.Option(help="Uvicorn worker processes (default 1).")] = None,
    min_stake: Annotated[float | None, typer.Option(help="Stake a caller needs (default 0).")] = None,
    serve: Annotated[bool, typer.Option(help="Advertise the endpoint on chain at start.")] = True,
    log_level: LogLevel = None,
) -> None:
    """Run a miner: serve the agent behind the signed /v1/tasks endpoint and advertise it on chain.

    Flags override ARENA_* environment variables (and .env); secrets such as the LLM API key are
    read from the environment only (ARENA_LLM_API_KEY). Exits 2 on invalid settings.

    Example: arena miner --network local --local-chain ./chain.db --netuid 1 --agent scripted --port 8091
    """
    given: dict[str, Any] = {
        "network": network,
        "netuid": netuid,
        "wallet_name": wallet_name,
        "wallet_hotkey": wallet_hotkey,
        "wallet_path": wallet_path,
        "local_chain": local_chain,
        "agent": agent,
        "llm_base_url": llm_base_url,
        "llm_model": llm_model,
        "host": host,
        "port": port,
        "external_ip": external_ip,
        "workers": workers,
        "min_stake": min_stake,
        "log_level": log_level,
        "serve_on_chain": None if serve else False,
    }
    from neurons.miner.process import main  # the SDK and the app load only when the command runs

    main({name: value for name, value in given.items() if value is not None})
