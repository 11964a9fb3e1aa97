"""The agent tools: versioned tool sets, their OpenAI schemas, and `run_tool` (never raises for agent faults).

Tool set ``sb-1`` (the default) is ShoppingBench's harness: find_product,
view_product_information, recommend_product, terminate. ``arena-2`` adds
find_products_in_same_shop and calculate_voucher. ``arena-3`` adds ask_user, a question to the
simulated shopper of a world task (``arena.world.shopper``).

Every tool has a kind (``Tool.kind``: search, view, answer, ask, compute, end). Judging and
curation read a call's kind (:func:`tool_kind`), never its name: a tool of an existing kind
is added by its module and its place in ``TOOLSETS``.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from arena.arguments import MAX_ARGUMENT_CHARS, ArgumentError, parse_arguments
from arena.tools import (
    ask_user,
    calculate_voucher,
    find_product,
    find_products_in_same_shop,
    recommend_product,
    terminate,
    view_product_information,
)
from arena.tools.tool import (
    DEFAULT_TOOLSET,
    Tool,
    ToolArgs,
    ToolContext,
    ToolKind,
    describe_validation_error,
    error_result,
    function_schema,
)
from arena.types import ToolResult

__all__ = [
    "DEFAULT_TOOLSET",
    "TOOLSETS",
    "Arguments",
    "Tool",
    "ToolArgs",
    "ToolContext",
    "ToolKind",
    "canonical_arguments",
    "offers",
    "tool_kind",
    "tool_names",
    "run_call",
    "run_tool",
    "tool_schemas",
]

_SB1: tuple[Tool[Any], ...] = (
    find_product.TOOL,
    view_product_information.TOOL,
    recommend_product.TOOL,
    terminate.TOOL,
)
TOOLSETS: dict[str, tuple[Tool[Any], ...]] = {
    DEFAULT_TOOLSET: _SB1,
    "arena-2": (*_SB1, find_products_in_same_shop.TOOL, calculate_voucher.TOOL),
}
TOOLSETS["arena-3"] = (*TOOLSETS["arena-2"], ask_user.TOOL)
_WIDEST = "arena-3"
_MAX_NAME_CHARS = 64
# A call's arguments as a tool takes them: the model's JSON text, or that text already read
# by ``arena.arguments.parse_arguments`` (an object, or why it is not one).
Arguments = str | dict[str, Any] | ArgumentError


def tool_schemas(toolset: str = DEFAULT_TOOLSET) -> list[dict[str, Any]]:
    """Return the OpenAI ``{"type": "function", ...}`` schemas of a tool set, in a stable order.

    Raises:
        KeyError: the tool set does not exist (a configuration error, not an agent fault).
    """
    return [function_schema(tool) for tool in TOOLSETS[toolset]]


def find_tool(name: str, toolset: str = DEFAULT_TOOLSET) -> Tool[Any] | None:
    """Return the tool called ``name`` in ``toolset``, or None if the set has no such tool."""
    return next((tool for tool in TOOLSETS[toolset] if tool.name == name), None)


def tool_kind(name: str) -> ToolKind | None:
    """The kind of the tool called ``name``; None where no tool set has one (an agent's invention).

    A tool means the same in every set it belongs to, so any set that holds it answers: a call
    is read by what the tool is, whichever set the episode offered.
    """
    return next((tool.kind for tools in TOOLSETS.values() for tool in tools if tool.name == name), None)


def tool_names(*kinds: ToolKind) -> tuple[str, ...]:
    """The names of the tools of these kinds, over every tool set (each once, in set order)."""
    names = (tool.name for tools in TOOLSETS.values() for tool in tools if tool.kind in kinds)
    return tuple(dict.fromkeys(names))


def offers(toolset: str, kind: ToolKind) -> bool:
    """Whether ``toolset`` has a tool of ``kind`` (an agent that cannot ask is never judged on asking).

    Raises:
        KeyError: the tool set does not exist.
    """
    return any(tool.kind == kind for tool in TOOLSETS[toolset])


def _read(arguments: Arguments) -> dict[str, Any] | ArgumentError:
    return parse_arguments(arguments) if isinstance(arguments, str) else arguments


def validate_arguments(tool: Tool[Any], arguments: Arguments) -> ToolArgs | str:
    """Validate a call's arguments against the tool's model, or return the agent-facing reason."""
    parsed = _read(arguments)
    if isinstance(parsed, ArgumentError):
        return f"invalid arguments for {tool.name}: {parsed}"
    try:
        args: ToolArgs = tool.args_model.model_validate(parsed)
    except ValidationError as exc:
        return describe_validation_error(tool.name, exc, tool.args_model)
    return args


def run_tool(name: str, arguments: Arguments, ctx: ToolContext) -> ToolResult:
    """Run one tool call; agent faults come back as ``ToolResult(error=True)``, never as exceptions.

    Args:
        name: the tool name the agent called.
        arguments: the call's arguments: the model's JSON string, or that string already read.
        ctx: the index and the active tool set.

    Returns:
        The result whose ``content`` (a JSON string) goes verbatim into the agent's tool message.
        Our own faults (a broken index) still raise.
    """
    tool = find_tool(name, ctx.toolset)
    if tool is None:
        return _unknown_tool(name, ctx.toolset)
    args = validate_arguments(tool, arguments)
    if isinstance(args, str):
        return error_result(args)
    return tool.run(args, ctx)


def _unknown_tool(name: str, toolset: str) -> ToolResult:
    available = ", ".join(t.name for t in TOOLSETS[toolset])
    return error_result(f"unknown tool {name[:_MAX_NAME_CHARS]!r} (available: {available})")


def run_call(
    name: str, arguments: Arguments, ctx: ToolContext, *, raw: str | None = None
) -> tuple[ToolResult, dict[str, Any]]:
    """``run_tool`` and ``canonical_arguments`` of one call, with its arguments validated once.

    What the tool log records of a call (``arena.episode.run_logged``): the same result as
    ``run_tool(name, arguments, ctx)`` and the same arguments as ``canonical_arguments(name,
    arguments, raw=raw)``, without running the tool's model over the arguments twice.
    """
    tool = find_tool(name, ctx.toolset)
    if tool is None:
        return _unknown_tool(name, ctx.toolset), canonical_arguments(name, arguments, raw=raw)
    parsed = _read(arguments)
    args = validate_arguments(tool, parsed)
    if isinstance(args, str):
        text = arguments if isinstance(arguments, str) else raw
        return error_result(args), canonical_arguments(name, parsed, raw=text)
    # A tool means the same in every set it belongs to, so these are its canonical arguments.
    return tool.run(args, ctx), args.model_dump(mode="json", exclude_none=True)


def canonical_arguments(name: str, arguments: Arguments, *, raw: str | None = None) -> dict[str, Any]:
    r"""Return the canonical form of a call's arguments, as the tool log records them.

    Valid arguments are normalised by the tool's model (trimmed, defaults resolved, ``None``
    dropped), so two calls that mean the same thing compare equal, and running the canonical
    form gives the same result. Invalid arguments are kept as decoded, or as ``{"_raw": text}``
    when they are not a JSON object (``raw`` is that text where ``arguments`` was read already;
    always encodable, a lone surrogate in it kept as its ``\udXXX`` escape). Never raises.
    """
    # Every tool means the same in every set it belongs to, so the widest set decides.
    tool = find_tool(name, _WIDEST)
    parsed = _read(arguments)
    args = validate_arguments(tool, parsed) if tool is not None else None
    if isinstance(args, ToolArgs):
        return args.model_dump(mode="json", exclude_none=True)
    if isinstance(parsed, dict):
        return parsed
    text = arguments if isinstance(arguments, str) else raw or ""
    # Kept as text the log can store: a lone surrogate a caller put in it becomes its escape.
    return {"_raw": text[:MAX_ARGUMENT_CHARS].encode("utf-8", "backslashreplace").decode("utf-8")}
