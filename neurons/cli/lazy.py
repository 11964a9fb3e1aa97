"""The `arena` root group: each command's module is imported only when that command runs (click's LazyGroup).

Click documents the pattern ("Lazily Loading Subcommands"): the group maps a command name to an
import path and imports it in ``get_command``. Two refinements for typer and for start-up cost:

- A target is a ``typer.Typer`` app (a command group, built as ``add_typer`` builds one) or a
  command function (built as ``app.command()`` builds one).
- The one-line help that ``arena --help`` lists is kept next to the import path, so listing the
  commands imports none of them (click's plain LazyGroup would import every module for its help).
  ``tests/neurons/cli/test_lazy.py`` checks that each line equals its command's own first help line.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup


@dataclass(frozen=True)
class LazyCommand:
    """A command the root group loads on first use.

    Attributes:
        target: ``"package.module:attribute"``: a ``typer.Typer`` app or a command function.
        help: the one line ``arena --help`` shows (the command's own first help line).
    """

    target: str
    help: str


def load_command(name: str, command: LazyCommand) -> Any:
    """Import ``command.target`` and build its click command, named ``name``."""
    module_name, _, attribute = command.target.partition(":")
    target = getattr(importlib.import_module(module_name), attribute)
    if isinstance(target, typer.Typer):
        group = typer.main.get_group(target)
        group.name = name
        return group
    single = typer.Typer(add_completion=False)
    single.command(name=name)(target)
    return typer.main.get_command(single)


class LazyGroup(TyperGroup):
    """A typer group whose ``lazy_commands`` are imported when run, not when listed.

    Subclass it with ``lazy_commands`` set (typer builds the group from the class it is given,
    so the table is a class attribute) and pass the subclass as ``typer.Typer(cls=...)``.
    """

    lazy_commands: Mapping[str, LazyCommand] = {}
    _listing = False  # True while the group's own help is drawn

    def list_commands(self, ctx: Any) -> list[str]:
        """The lazy commands in table order, then those defined on the app itself."""
        eager = [name for name in super().list_commands(ctx) if name not in self.lazy_commands]
        return [*self.lazy_commands, *eager]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The command named ``cmd_name``; a lazy one is imported (once) unless help is being listed."""
        if cmd_name in self.commands or cmd_name not in self.lazy_commands:
            return super().get_command(ctx, cmd_name)
        lazy = self.lazy_commands[cmd_name]
        if self._listing:
            return TyperCommand(name=cmd_name, help=lazy.help, short_help=lazy.help)
        self.commands[cmd_name] = load_command(cmd_name, lazy)
        return self.commands[cmd_name]

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """The group's help; its command list comes from the table, so no command module is imported."""
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """As typer's, with "did you mean" suggestions drawn from every command, loaded or not."""
        if args and not args[0].startswith("-") and args[0] not in self.list_commands(ctx):
            close = difflib.get_close_matches(args[0], self.list_commands(ctx))
            if close:
                ctx.fail(f"No such command {args[0]!r}. Did you mean {', '.join(map(repr, close))}?")
        return super().resolve_command(ctx, args)
