"""Command-line options shared by several commands: the neurons' chain, wallet and logs; eval's judge."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

# Every flag defaults to None so that an absent flag leaves the ARENA_* variable (or default) in force.
Str = str | None

Network = Annotated[Str, typer.Option(help="finney, test, local or a ws:// URL (env ARENA_NETWORK).")]
Netuid = Annotated[int | None, typer.Option(help="The subnet id (env ARENA_NETUID).")]
WalletName = Annotated[Str, typer.Option(help="Wallet (coldkey) name.")]
WalletHotkey = Annotated[Str, typer.Option(help="Hotkey name in the wallet.")]
WalletPath = Annotated[Path | None, typer.Option(help="Wallets directory.")]
LocalChain = Annotated[Path | None, typer.Option(help="Local chain file, for --network local.")]
Host = Annotated[Str, typer.Option(help="Interface to listen on (default 0.0.0.0).")]
LogLevel = Annotated[Str, typer.Option(help="DEBUG, INFO, WARNING or ERROR.")]

# `arena eval` and `arena eval rejudge`: the reasoning judge of an evaluation run.
EvalJudgeUrl = Annotated[Str, typer.Option("--judge-url", help="OpenAI-compatible reasoning judge.")]
EvalJudgeModel = Annotated[Str, typer.Option("--judge-model", help="Pinned judge model name.")]
EvalJudgeFormat = Annotated[
    str, typer.Option("--judge-format", help="Judge's constrained decoding: none, json_object, json_schema.")
]
