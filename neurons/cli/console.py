"""What the commands print on stderr: errors, warnings and notes (one line each), progress bars and status.

stdout is kept for results (``--json`` output, tables), so everything here goes to stderr. Messages
go through ``typer.echo``, which never wraps: a long path or URL stays on one line whatever the
terminal's width, and a script or test reading stderr sees it whole (rich would wrap at 80 columns
when stderr is not a terminal). Colour is added only on a terminal. The rich consoles behind
progress bars and the demo's status line and tables are made when a command asks for one, never at
import.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, NoReturn

import typer

if TYPE_CHECKING:
    from rich.console import Console


def error(message: str) -> None:
    """Print ``error: <message>`` on stderr."""
    typer.echo(typer.style("error:", fg="red") + " " + message, err=True)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``error: <message>`` on stderr and exit with ``code`` (2: bad input, 1: a failure)."""
    error(message)
    raise typer.Exit(code)


def warn(message: str) -> None:
    """Print ``warning: <message>`` on stderr."""
    typer.echo(typer.style("warning:", fg="yellow") + " " + message, err=True)


def note(message: str) -> None:
    """Print one line of progress or context on stderr."""
    typer.echo(message, err=True)


def stderr_console() -> Console:
    """A rich console on stderr that never breaks a line at a width (the terminal wraps, if any)."""
    from rich.console import Console

    return Console(stderr=True, soft_wrap=True, highlight=False)


def stdout_console() -> Console:
    """A rich console on stdout for tables, with the same no-wrap rule for plain lines."""
    from rich.console import Console

    return Console(soft_wrap=True, highlight=False)


@contextmanager
def progress(label: str, total: int | None, done: int = 0) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr, drawn only on a terminal; yields ``update(completed)``.

    Args:
        label: what is counted ("samples", "index").
        total: how many there will be; None when unknown (the bar then only counts).
        done: how many were done before (a resumed run).
    """
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=stderr_console(), transient=True, disable=not sys.stderr.isatty()) as bar:
        task = bar.add_task(label, total=total, completed=done)
        yield lambda completed: bar.update(task, completed=completed)
