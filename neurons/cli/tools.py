"""`arena tools`: run the agent tool server on its own (practice mode for agent developers)."""

from __future__ import annotations

import logging
import secrets
from pathlib import Path
from typing import Annotated

import typer

from arena.episode import MIN_SECRET_BYTES, Budgets
from arena.errors import SearchIndexError
from arena.index import open_index
from arena.tools import DEFAULT_TOOLSET, TOOLSETS, ToolContext
from arena.toolserver import DEFAULT_PRACTICE_BUDGETS, create_tool_app
from neurons.cli.console import fail
from neurons.logs import setup_logging

logger = logging.getLogger(__name__)

app = typer.Typer(help="The agent tool server.", no_args_is_help=True, add_completion=False)


def _read_secret(path: Path) -> bytes:
    try:
        secret = path.read_bytes().strip()
    except OSError as exc:
        fail(f"cannot read --secret-file {path}: {exc.strerror}")
    if len(secret) < MIN_SECRET_BYTES:
        fail(f"--secret-file {path} holds fewer than {MIN_SECRET_BYTES} bytes")
    return secret


@app.command()
def serve(
    index: Annotated[Path, typer.Option(help="Search index directory (from `arena catalog build`).")],
    practice: Annotated[bool, typer.Option(help="Let anyone open practice episodes.")] = False,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port to listen on.")] = 8600,
    toolset: Annotated[
        str, typer.Option(help="Tool set: sb-1 (ShoppingBench) or arena-2.")
    ] = DEFAULT_TOOLSET,
    secret_file: Annotated[
        Path | None, typer.Option(help="File holding the token secret; random per process if omitted.")
    ] = None,
    max_calls: Annotated[int, typer.Option(help="Tool calls per practice episode.")] = (
        DEFAULT_PRACTICE_BUDGETS.max_calls
    ),
    max_seconds: Annotated[float, typer.Option(help="Seconds per practice episode.")] = (
        DEFAULT_PRACTICE_BUDGETS.max_seconds
    ),
    log_level: Annotated[str, typer.Option(help="DEBUG, INFO, WARNING or ERROR.")] = "INFO",
) -> None:
    """Serve the agent tools over HTTP (GET /v1/tools, POST /v1/tools/{name}).

    --practice: anyone may open an episode (POST /v1/practice/episodes).

    Without --practice, tokens come only from a validator sharing --secret-file.

    Example: arena tools serve --index data/index --practice --port 8600
    """
    import uvicorn

    from neurons.serving import uvicorn_options

    if toolset not in TOOLSETS:
        fail(f"unknown --toolset {toolset!r} (known: {', '.join(TOOLSETS)})")
    if secret_file is None and not practice:
        fail("without --practice, pass --secret-file (tokens must be verifiable by their issuer)")
    try:
        budgets = Budgets(max_calls=max_calls, max_seconds=max_seconds)
    except ValueError:
        fail("--max-calls and --max-seconds must be positive")
    secret = _read_secret(secret_file) if secret_file is not None else secrets.token_bytes(32)
    setup_logging(log_level)
    try:
        search_index = open_index(index)
    except SearchIndexError as exc:
        fail(str(exc))
    server = create_tool_app(
        ToolContext(index=search_index, toolset=toolset),
        secret=secret,
        practice=budgets if practice else None,
    )
    logger.info(
        "tool_server url=http://%s:%d toolset=%s practice=%s catalog=%s products=%d",
        host,
        port,
        toolset,
        practice,
        search_index.catalog_version,
        len(search_index),
    )
    try:
        uvicorn.run(server, host=host, port=port, log_config=None, access_log=False, **uvicorn_options())
    finally:
        search_index.close()
