"""What the local model reads: ChatML turns, tool calls, and tool results rendered raw or compact.

One renderer serves the local server's chat handler (what the model sees at inference) and the
learning benchmark's training rows (what the model is taught on), so the two cannot drift apart.
:func:`render_segments` returns the prompt as pieces, each marked as the model's own text
(an assistant turn, trained on) or context; :func:`render_prompt` joins them and opens an
assistant turn.

Compact observations: a tool result is what the tool server returned, byte for byte, in the
trajectory; only its rendering for the model changes. Search hits become one line each (id,
shop, title, price, services, sold), product details a line of attributes and SKU options per
product. Descriptions are left out: no constraint a task states is checked against them.
Anything that is not one of our tools' JSON shapes (an error text, another server's output)
is shown raw.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

CALL_OPEN = "<tool_call>\n"
CALL_CLOSE = "\n</tool_call>"
END = "<|im_end|>"
ASSISTANT_OPEN = "<|im_start|>assistant\n"
TOOLS_PREAMBLE = (
    "You can call these tools. To call one, reply with exactly one tool call in this form:\n"
    + CALL_OPEN
    + '{"name": "<tool name>", "arguments": {<the arguments as a JSON object>}}'
    + CALL_CLOSE
    + "\nEach tool's result comes back in a <tool_response> block.\nTools:"
)
Observations = Literal["raw", "compact"]
ToolListing = Literal["json", "compact"]


@dataclass(frozen=True)
class Segment:
    """A piece of the rendered prompt; ``own`` is True for the model's own turns (trained on)."""

    text: str
    own: bool = False


def render_prompt(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    *,
    observations: Observations = "raw",
    listing: ToolListing = "json",
) -> str:
    """Render an OpenAI conversation as a ChatML prompt ending in an open assistant turn.

    Args:
        messages: OpenAI chat messages (dicts).
        tools: OpenAI tool schemas, listed in the system turn; None or empty lists nothing.
        observations: how tool results are shown (see the module docstring).
        listing: how the tools are listed: their JSON schemas, or a line per tool and argument.

    Returns:
        The prompt text (no escaping of any kind).
    """
    segments = render_segments(messages, tools, observations=observations, listing=listing)
    return "".join(segment.text for segment in segments) + ASSISTANT_OPEN


def render_segments(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    *,
    observations: Observations = "raw",
    listing: ToolListing = "json",
) -> list[Segment]:
    """Render a conversation turn by turn; an assistant turn is its header, then its own text."""
    names = {
        call.get("id"): call.get("function", {}).get("name", "")
        for message in messages
        for call in message.get("tool_calls") or ()
    }
    tool_lines = [_listed(tool["function"], listing) for tool in tools or ()]
    segments: list[Segment] = []
    system_seen = False
    for message in messages:
        role, content = message.get("role"), _text(message.get("content"))
        if role == "system" and not system_seen:
            system_seen = True
            if tool_lines:
                content = "\n\n".join(filter(None, [content, TOOLS_PREAMBLE, "\n".join(tool_lines)]))
            segments.append(Segment(_turn("system", content)))
        elif role == "assistant":
            thought = _text(message.get("reasoning_content"))
            body = "\n".join(filter(None, [thought, content]))
            calls = "".join(render_call(call) for call in message.get("tool_calls") or ())
            segments.append(Segment(ASSISTANT_OPEN))
            # ``weight: 0`` (OpenAI's fine-tuning convention): context for a later turn, not taught.
            segments.append(Segment(f"{body}{calls}{END}\n", own=message.get("weight", 1) != 0))
        elif role == "tool":
            name = names.get(message.get("tool_call_id"), "tool")
            shown = render_observation(name, content) if observations == "compact" else content
            segments.append(
                Segment(_turn("user", f'<tool_response name="{name}">\n{shown}\n</tool_response>'))
            )
        else:
            segments.append(Segment(_turn("user" if role != "system" else "system", content)))
    if tool_lines and not system_seen:
        segments.insert(0, Segment(_turn("system", f"{TOOLS_PREAMBLE}\n" + "\n".join(tool_lines))))
    return segments


def _listed(function: Mapping[str, Any], listing: ToolListing) -> str:
    if listing == "json":
        keys = ("name", "description", "parameters")
        return json.dumps({key: function.get(key) for key in keys}, ensure_ascii=False)
    parameters = function.get("parameters") or {}
    required = set(parameters.get("required") or ())
    lines = [f"- {function.get('name')}: {_first_sentence(function.get('description'))}"]
    for name, spec in (parameters.get("properties") or {}).items():
        kind = "|".join(str(v) for v in spec["enum"]) if "enum" in spec else str(spec.get("type", "any"))
        need = "required" if name in required else "optional"
        lines.append(f"  {name} ({kind}, {need}): {str(spec.get('description') or '').strip()}")
    return "\n".join(lines)


def _first_sentence(text: Any) -> str:
    words = str(text or "").strip()
    end = words.find(". ")
    return words if end < 0 else words[: end + 1]


def render_call(call: Mapping[str, Any]) -> str:
    """Render one OpenAI tool call as the model writes it: ``<tool_call>`` JSON ``</tool_call>``."""
    function = call.get("function", {})
    arguments: Any = function.get("arguments")
    if isinstance(arguments, str) or arguments is None:  # the wire's JSON string (TRL rows hold a dict)
        try:
            arguments = json.loads(arguments or "{}")
        except json.JSONDecodeError:
            pass  # shown as written: the model sees its own malformed call
    body = json.dumps({"name": function.get("name"), "arguments": arguments}, ensure_ascii=False)
    return f"{CALL_OPEN}{body}{CALL_CLOSE}"


def render_observation(tool: str, content: str) -> str:
    """Return a tool result as the compact text the model reads, or ``content`` unchanged."""
    try:
        value = json.loads(content)
    except (json.JSONDecodeError, TypeError):
        return content
    if not isinstance(value, list) or not value or not all(isinstance(v, dict) for v in value):
        return content
    if all("title" in v and "price" in v for v in value):
        return "\n".join(_hit_line(hit) for hit in value)
    if all("product_id" in v and ("attributes" in v or "sku_options" in v) for v in value):
        return "\n".join(_detail_line(product) for product in value)
    return content


def _hit_line(hit: Mapping[str, Any]) -> str:
    services = ", ".join(str(s) for s in hit.get("service") or ()) or "none"
    parts = [
        f"id {hit.get('product_id')}",
        f"shop {hit.get('shop_id')}",
        str(hit.get("title", "")),
        f"price {hit.get('price')}",
        f"services {services}",
    ]
    if "sold_count" in hit:
        parts.append(f"sold {hit['sold_count']}")
    return " | ".join(parts)


def _detail_line(product: Mapping[str, Any]) -> str:
    attributes = product.get("attributes") or {}
    attrs = "; ".join(
        f"{key}={', '.join(str(v) for v in values) if isinstance(values, list) else values}"
        for key, values in attributes.items()
    )
    options = product.get("sku_options") or {}
    skus = "; ".join(
        f"{key}: " + ", ".join(f"{k}={v}" for k, v in variant.items())
        if isinstance(variant, dict)
        else str(variant)
        for key, variant in options.items()
    )
    parts = [f"id {product.get('product_id')}", f"attributes {attrs or 'none'}", f"options {skus or 'none'}"]
    extra = {k: v for k, v in product.items() if k in ("price", "shop_id", "service") and v not in (None, "")}
    parts += [f"{k} {', '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in extra.items()]
    return " | ".join(parts)


def _turn(role: str, content: str) -> str:
    return f"<|im_start|>{role}\n{content}{END}\n"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""
