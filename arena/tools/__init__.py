"""The agent tools: versioned tool sets, their OpenAI schemas, and `run_tool` (never raises for agent faults).

Tool set ``sb-1`` (the default) is ShoppingBench's harness: find_product,
view_product_information, recommend_product, terminate. ``arena-2`` adds
find_products_in_same_shop and calculate_voucher.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from arena.tools import (
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
    describe_validation_error,
    error_result,
    function_schema,
)
from arena.types import ToolResult

__all__ = [
    "DEFAULT_TOOLSET",
    "MAX_ARGUMENT_CHARS",
    "TOOLSETS",
    "Tool",
    "ToolArgs",
    "ToolContext",
    "canonical_arguments",
    "parse_arguments",
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
_WIDEST = "arena-2"
# Arguments are a handful of short strings; anything this long is a runaway generation.
MAX_ARGUMENT_CHARS = 16_384
_MAX_NAME_CHARS = 64


def tool_schemas(toolset: str = DEFAULT_TOOLSET) -> list[dict[str, Any]]:
    """Return the OpenAI ``{"type": "function", ...}`` schemas of a tool set, in a stable order.

    Raises:
        KeyError: the tool set does not exist (a configuration error, not an agent fault).
    """
    return [function_schema(tool) for tool in TOOLSETS[toolset]]


def find_tool(name: str, toolset: str = DEFAULT_TOOLSET) -> Tool[Any] | None:
    """Return the tool called ``name`` in ``toolset``, or None if the set has no such tool."""
    return next((tool for tool in TOOLSETS[toolset] if tool.name == name), None)


def parse_arguments(arguments: str | dict[str, Any]) -> dict[str, Any] | str:
    """Decode a tool call's arguments into a JSON object, or return why they cannot be.

    A JSON string is decoded strictly (no NaN or Infinity); an empty string means no arguments.
    """
    if isinstance(arguments, dict):
        return arguments
    if len(arguments) > MAX_ARGUMENT_CHARS:
        return f"arguments are longer than {MAX_ARGUMENT_CHARS} characters"
    if not arguments.strip():
        return {}
    try:
        value = json.loads(arguments, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        return f"arguments are not valid JSON ({_first_line(exc)})"
    if not isinstance(value, dict):
        return f"arguments must be a JSON object, got {type(value).__name__}"
    return value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__


def validate_arguments(tool: Tool[Any], arguments: str | dict[str, Any]) -> ToolArgs | str:
    """Parse and validate a call's arguments against the tool's model, or return the agent-facing reason."""
    parsed = parse_arguments(arguments)
    if isinstance(parsed, str):
        return f"invalid arguments for {tool.name}: {parsed}"
    try:
        args: ToolArgs = tool.args_model.model_validate(parsed)
    except ValidationError as exc:
        return describe_validation_error(tool.name, exc, tool.args_model)
    return args


def run_tool(name: str, arguments: str | dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Run one tool call; agent faults come back as ``ToolResult(error=True)``, never as exceptions.

    Args:
        name: the tool name the agent called.
        arguments: the call's arguments, as the model's JSON string or an already-decoded object.
        ctx: the index and the active tool set.

    Returns:
        The result whose ``content`` (a JSON string) goes verbatim into the agent's tool message.
        Our own faults (a broken index) still raise.
    """
    tool = find_tool(name, ctx.toolset)
    if tool is None:
        available = ", ".join(t.name for t in TOOLSETS[ctx.toolset])
        return error_result(f"unknown tool {name[:_MAX_NAME_CHARS]!r} (available: {available})")
    args = validate_arguments(tool, arguments)
    if isinstance(args, str):
        return error_result(args)
    return tool.run(args, ctx)


def canonical_arguments(name: str, arguments: str | dict[str, Any]) -> dict[str, Any]:
    """Return the canonical form of a call's arguments, as the tool log records them.

    Valid arguments are normalised by the tool's model (trimmed, defaults resolved, ``None``
    dropped), so two calls that mean the same thing compare equal, and running the canonical
    form gives the same result. Invalid arguments are kept as decoded, or as ``{"_raw": text}``
    when they are not a JSON object. Never raises.
    """
    # Every tool means the same in every set it belongs to, so the widest set decides.
    tool = find_tool(name, _WIDEST)
    args = validate_arguments(tool, arguments) if tool is not None else None
    if isinstance(args, ToolArgs):
        return args.model_dump(mode="json", exclude_none=True)
    parsed = parse_arguments(arguments)
    if isinstance(parsed, dict):
        return parsed
    raw = arguments if isinstance(arguments, str) else ""
    return {"_raw": raw[:MAX_ARGUMENT_CHARS]}
