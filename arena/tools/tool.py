"""The Tool type, its run context, argument-model base, result encoding and OpenAI schema generation."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from arena.arguments import split_product_ids
from arena.types import ToolResult

if TYPE_CHECKING:
    from arena.index import ProductIndex
    from arena.world.shopper import ShopperSession

# How many product ids one call may name; ShoppingBench has no cap, but an unbounded list is
# an easy way to make one call fetch the whole catalog.
MAX_IDS = 20
MAX_ID_CHARS = 64
# Keys of a JSON schema that OpenAI function calling and vLLM's guided decoding both accept.
_SCHEMA_KEYS = ("type", "description", "enum", "minimum", "maximum", "items")


class ToolArgs(BaseModel):
    """Base of every tool's argument model: strict types, no unknown fields, no NaN."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)


A = TypeVar("A", bound=ToolArgs)
DEFAULT_TOOLSET = "sb-1"  # ShoppingBench's four tools (``arena.tools.TOOLSETS``)


@dataclass(frozen=True)
class ToolContext:
    """What a tool may touch while it runs: the index (or a world over one), the tool set, the shopper.

    ``shopper`` is the episode's simulated shopper (``ask_user``, tool set arena-3); only that
    tool reads it, and the episode registry sets it per episode (``arena.episode``).
    """

    index: ProductIndex
    toolset: str = DEFAULT_TOOLSET
    shopper: ShopperSession | None = None


# What a tool is for, which is all judging and curation know of it (``arena.tools.tool_kind``):
# each kind's arguments and result are a contract its tools keep (docs/tools.md, "Kinds").
ToolKind = Literal["search", "view", "answer", "ask", "compute", "end"]


@dataclass(frozen=True)
class Tool(Generic[A]):
    """One agent tool: its name, its kind, what it does, its argument model and the function that runs it.

    Judging and curation ask a tool's ``kind`` (a search is counted, a view verifies, the answer
    is read, ...), never its name, so a new tool of an existing kind needs its module and a
    place in a tool set, nothing else.
    """

    name: str
    kind: ToolKind
    description: str
    args_model: type[A]
    run: Callable[[A, ToolContext], ToolResult]


def json_result(value: Any) -> ToolResult:
    """Encode a successful tool result as the JSON string the agent receives."""
    return ToolResult(content=json.dumps(value, ensure_ascii=False))


def error_result(message: str) -> ToolResult:
    """Encode an agent fault (bad arguments, unknown ids) as an error result the agent can read."""
    return ToolResult(content=json.dumps({"error": message}, ensure_ascii=False), error=True)


def parse_ids(text: str) -> list[str]:
    """Split a comma-separated id list: trim each id, drop empties and repeats, keep first-seen order."""
    ids, _ = split_product_ids(text)
    return list(ids)


def check_ids(ids: list[str]) -> list[str]:
    """Validate a parsed id list for an argument validator (raises ``ValueError`` with the reason)."""
    if not ids:
        raise ValueError("give at least one product id")
    if len(ids) > MAX_IDS:
        raise ValueError(f"at most {MAX_IDS} product ids per call, got {len(ids)}")
    too_long = [i for i in ids if len(i) > MAX_ID_CHARS]
    if too_long:
        raise ValueError(f"product id longer than {MAX_ID_CHARS} characters: {too_long[0][:MAX_ID_CHARS]}...")
    return ids


def describe_validation_error(tool: str, exc: ValidationError, args_model: type[BaseModel]) -> str:
    """Turn a pydantic validation error into one short line an agent can act on."""
    problems: list[str] = []
    for err in exc.errors(include_url=False)[:3]:
        field = ".".join(str(part) for part in err["loc"]) or "arguments"
        kind = err["type"]
        if kind == "missing":
            problems.append(f"missing required argument '{field}'")
        elif kind == "extra_forbidden":
            allowed = ", ".join(args_model.model_fields)
            problems.append(f"unexpected argument '{field}' (allowed: {allowed})")
        else:
            message = err["msg"].removeprefix("Value error, ")
            problems.append(f"{field}: {message} (got {_short(err.get('input'))})")
    more = len(exc.errors()) - len(problems)
    suffix = f" (and {more} more)" if more > 0 else ""
    return f"invalid arguments for {tool}: " + "; ".join(problems) + suffix


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= 60 else text[:57] + "..."


def function_schema(tool: Tool[Any]) -> dict[str, Any]:
    """Return the OpenAI function-calling schema of a tool, generated from its argument model.

    Pydantic's schema is cleaned to what OpenAI and vLLM accept: no titles, optional fields
    as their plain type (not ``anyOf`` with null), ``required`` listing only required fields.
    """
    raw = tool.args_model.model_json_schema()
    properties = {name: _clean(spec) for name, spec in raw.get("properties", {}).items()}
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    parameters["required"] = list(raw.get("required", []))
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": parameters},
    }


def _clean(spec: dict[str, Any]) -> dict[str, Any]:
    variants = [s for s in spec.get("anyOf", []) if s.get("type") != "null"]
    base = dict(variants[0]) if len(variants) == 1 else {}
    merged = {**base, **{k: v for k, v in spec.items() if k != "anyOf"}}
    if "const" in merged and "enum" not in merged:
        merged["enum"] = [merged["const"]]
    cleaned = {key: merged[key] for key in _SCHEMA_KEYS if key in merged}
    if "items" in cleaned:
        cleaned["items"] = _clean(cleaned["items"])
    return cleaned
