"""Tightened copies of tool schemas for servers that decode tool arguments under a grammar built from them.

llama-cpp-python turns a tool's JSON schema into a grammar. Its grammar lets a string hold raw
control characters (so the "JSON" it emits can fail to parse), ignores integer bounds, and puts no
limit on string length, so a small model can ramble until the context is full. Sending it a
tightened copy of each schema fixes all three: strings get a pattern without quotes, backslashes
or control characters and with a maximum length; small integer ranges become enums. The tool
server still validates the real arguments; only what the model may emit is narrowed.
"""

from __future__ import annotations

import copy
from typing import Any

MAX_ENUM_RANGE = 50  # integer ranges up to this size become enums


def constrain_tool_schemas(tools: list[dict[str, Any]], max_string: int) -> list[dict[str, Any]]:
    """Return deep copies of OpenAI tool schemas whose arguments a grammar can bound.

    Args:
        tools: OpenAI tool schemas (``{"type": "function", "function": {..., "parameters": ...}}``).
        max_string: the most characters a free string argument may have.

    Returns:
        New schemas; the input is not modified.
    """
    tightened = copy.deepcopy(tools)
    for tool in tightened:
        function = tool.get("function")
        if isinstance(function, dict) and isinstance(function.get("parameters"), dict):
            function["parameters"] = constrain_schema(function["parameters"], max_string)
    return tightened


def constrain_schema(schema: dict[str, Any], max_string: int) -> dict[str, Any]:
    """Tighten one JSON schema (recursively) as described in the module docstring."""
    out = {key: _walk(value, max_string, key) for key, value in schema.items()}
    kind = out.get("type")
    if kind == "string" and not {"enum", "const", "pattern", "format"} & out.keys():
        limit = min(int(out.pop("maxLength", max_string)), max_string)
        low = int(out.pop("minLength", 0))
        out["pattern"] = f'^[^"\\\\\\x00-\\x1f]{{{low},{max(low, limit)}}}$'
    if kind == "integer" and not {"enum", "const"} & out.keys():
        minimum, maximum = out.get("minimum"), out.get("maximum")
        if isinstance(minimum, int) and isinstance(maximum, int) and 0 <= maximum - minimum <= MAX_ENUM_RANGE:
            out["enum"] = list(range(minimum, maximum + 1))
    return out


def _walk(value: Any, max_string: int, key: str) -> Any:
    # Walk into sub-schemas only; "enum"/"default"/"examples" hold values, not schemas.
    if key in ("enum", "const", "default", "examples", "required"):
        return value
    if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
        return {name: _walk(sub, max_string, "") for name, sub in value.items()}
    if isinstance(value, dict):
        return constrain_schema(value, max_string)
    if isinstance(value, list):
        return [constrain_schema(item, max_string) if isinstance(item, dict) else item for item in value]
    return value
