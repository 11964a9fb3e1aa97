"""Command-line flags made from settings fields: each flag's type, help and variable come from its field.

``arena validator``, ``arena miner`` and ``arena eval`` offer a flag for some of their settings. Instead of
writing each flag again (a type, a help text, a default: a copy that drifts from the field), a
command lists the fields it offers (each a ``Flag``) and ``with_flags`` adds one option per field
to its signature: default None, so an absent flag leaves the ``ARENA_*`` variable (or the
field's own default) in force; help from the field's description, its variable (settings read
from the environment) and its default.
The command receives them as ``**given`` and passes ``overrides(given, flags)`` to the settings.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

import typer
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

Command = TypeVar("Command", bound=Callable[..., None])
_PLAIN = (bool, int, float, Path)  # kept as the flag's type; anything else is read as a string


@dataclass(frozen=True)
class Flag:
    """A flag for one settings field.

    Attributes:
        path: the field; a section's field as ``section.field`` (``round.tasks_per_round``).
        name: the flag when it is not ``--<field name>`` (``--judge-url``); a boolean's
            is ``--<name>/--no-<name>``.
    """

    path: str
    name: str | None = None

    @property
    def flag(self) -> str:
        """The flag as typed (``--judge-url``; a boolean's positive form)."""
        return self.name or "--" + self.path.rpartition(".")[2].replace("_", "-")

    @property
    def param(self) -> str:
        """The command's parameter name (a Python identifier)."""
        return self.path.replace(".", "__")

    def option(self, boolean: bool) -> str:
        """The option's declaration for typer."""
        name = self.flag
        return f"{name}/--no-{name.removeprefix('--')}" if boolean and "/" not in name else name


# Every neuron's chain, wallet, listening and logging flags (``neurons.settings.NeuronSettings``).
NEURON_FLAGS = (
    Flag("network"),
    Flag("netuid"),
    Flag("wallet_name"),
    Flag("wallet_hotkey"),
    Flag("wallet_path"),
    Flag("local_chain"),
    Flag("host"),
    Flag("port"),
    Flag("log_level"),
)


def field_of(settings: type[BaseModel], path: str) -> FieldInfo:
    """The field at ``path`` of a settings class (through its section models)."""
    model, (*sections, name) = settings, path.split(".")
    for section in sections:
        annotation = model.model_fields[section].annotation
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            raise TypeError(f"{section} of {model.__name__} is not a section")
        model = annotation
    return model.model_fields[name]


def env_name(settings: type[BaseModel], path: str) -> str:
    """The variable that sets the field at ``path`` (``ARENA_ROUND__TASKS_PER_ROUND``).

    A top-level field read under a name of its own (a ``validation_alias``) is read from that.
    """
    alias = field_of(settings, path).validation_alias if "." not in path else None
    if isinstance(alias, str):
        return alias.upper()
    prefix = str(settings.model_config.get("env_prefix", ""))
    return prefix + path.replace(".", "__").upper()


def settings_variables(settings: type[BaseModel]) -> list[str]:
    """Every variable the settings read: ``ARENA_<FIELD>``, and ``ARENA_<SECTION>__<FIELD>`` in a section."""
    names = []
    for name, field in settings.model_fields.items():
        section = field.annotation
        if isinstance(section, type) and issubclass(section, BaseModel):
            names += [env_name(settings, f"{name}.{sub}") for sub in section.model_fields]
        else:
            names.append(env_name(settings, name))
    return names


def flag_help(settings: type[BaseModel], flag: Flag) -> str:
    """The help of ``flag``: its description, then its variable (if any) and default (or "required")."""
    field = field_of(settings, flag.path)
    # Settings read from the environment name their variable; plain ones (``arena eval``'s) do not.
    where = [f"Env {env_name(settings, flag.path)}"] if issubclass(settings, BaseSettings) else []
    if field.is_required():
        where.append("required")
    elif not field.default_factory_takes_validated_data:  # a default made from other fields says so itself
        default = field.get_default(call_default_factory=True)
        if isinstance(default, tuple):  # a comma-separated list on the command line
            default = ",".join(str(item) for item in default) or "none"
        if default is not None:
            where.append(f"default {str(default).lower() if isinstance(default, bool) else default}")
    said = ", ".join(where)
    return f"{field.description or ''} {said[:1].upper() + said[1:]}{'.' if said else ''}".strip()


def flag_type(field: FieldInfo) -> type:
    """The type a flag parses its value as: the field's own for plain types, else ``str``."""
    annotation: Any = field.annotation
    if get_origin(annotation) in (Union, types.UnionType):
        annotation = next((a for a in get_args(annotation) if a is not type(None)), str)
    return annotation if annotation in _PLAIN else str


def with_flags(command: Command, settings: type[BaseModel], flags: Sequence[Flag]) -> Command:
    """Add an option for each of ``flags`` to ``command``, which takes them as ``**given``.

    The options come first, then the command's own (``--once``...), all keyword-only.
    """
    signature = inspect.signature(command, eval_str=True)
    own = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
        for p in signature.parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    added = []
    for flag in flags:
        kind = flag_type(field_of(settings, flag.path))
        option = typer.Option(flag.option(kind is bool), help=flag_help(settings, flag))
        annotation = Annotated[kind | None, option]  # type: ignore[valid-type]
        added.append(
            inspect.Parameter(flag.param, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)
        )
    parameters = [*added, *own]
    command.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": None}
    return command


def overrides(given: Mapping[str, Any], flags: Sequence[Flag]) -> dict[str, Any]:
    """The settings keywords of the flags given (None: absent), sections nested."""
    out: dict[str, Any] = {}
    for flag in flags:
        value = given.get(flag.param)
        if value is None:
            continue
        *sections, name = flag.path.split(".")
        target = out
        for section in sections:
            target = target.setdefault(section, {})
        target[name] = value
    return out


def flag_errors(error: ValidationError, settings: type[BaseModel], flags: Sequence[Flag]) -> list[str]:
    """Each of pydantic's complaints, named by the flag that sets the field (else its variable)."""
    named = {flag.path: flag.flag for flag in flags}
    lines = []
    for problem in error.errors():
        path = ".".join(str(part) for part in problem["loc"])
        try:
            where = named.get(path) or env_name(settings, path)
        except (KeyError, TypeError):  # not one field (the model as a whole, an item of a list)
            where = path or settings.__name__
        lines.append(f"{where}: {problem['msg']}")
    return lines
