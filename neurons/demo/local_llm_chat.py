"""A tool-calling chat handler for llama-cpp-python's server, and the server entry point that registers it.

Why not llama-cpp-python's own ``chatml-function-calling`` format: its template HTML-escapes every
message (a JSON argument string reaches the model as ``{&#34;q&#34;: ...}``, and a tiny model
copies the entities back), renders ``tool`` messages as empty turns, rejects
``tool_choice="required"``, and lets its argument grammar emit raw control characters. This
handler renders ChatML without escaping, shows tool results, and decodes every tool call under a
grammar built from the offered tools' JSON schemas, so the model picks the tool *and* writes its
arguments while the output is always a well-formed call:

- ``tool_choice`` ``"required"``: one call to any offered tool (the model chooses which);
- a named function: one call to that tool;
- ``"auto"``: a one-token grammar choice between a tool call and a text answer first;
- ``"none"`` or no tools: plain text.

Run as ``python -m neurons.demo.local_llm_chat <llama_cpp.server arguments> --chat_format arena-tools``.
"""

from __future__ import annotations

import importlib
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

HANDLER_NAME = "arena-tools"
CALL_OPEN = "<tool_call>\n"
CALL_CLOSE = "\n</tool_call>"
ANSWER = "Answer:"
DEFAULT_MAX_TOKENS = 256
# Request fields passed through to llama.cpp's sampler when the client sets them.
SAMPLING = ("top_p", "top_k", "min_p", "repeat_penalty", "presence_penalty", "frequency_penalty")
TOOLS_PREAMBLE = (
    "You can call these tools. To call one, reply with exactly one tool call in this form:\n"
    + CALL_OPEN
    + '{"name": "<tool name>", "arguments": {<the arguments as a JSON object>}}'
    + CALL_CLOSE
    + "\nEach tool's result comes back in a <tool_response> block.\nTools:"
)


def render_prompt(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None) -> str:
    """Render an OpenAI conversation as a ChatML prompt ending in an open assistant turn.

    Args:
        messages: OpenAI chat messages (dicts).
        tools: OpenAI tool schemas, listed in the system turn; None or empty lists nothing.

    Returns:
        The prompt text (no escaping of any kind).
    """
    names = {
        call.get("id"): call.get("function", {}).get("name", "")
        for message in messages
        for call in message.get("tool_calls") or ()
    }
    tool_lines = [
        json.dumps(
            {key: tool["function"].get(key) for key in ("name", "description", "parameters")},
            ensure_ascii=False,
        )
        for tool in tools or ()
    ]
    parts: list[str] = []
    system_seen = False
    for message in messages:
        role, content = message.get("role"), _text(message.get("content"))
        if role == "system" and not system_seen:
            system_seen = True
            if tool_lines:
                content = "\n\n".join(filter(None, [content, TOOLS_PREAMBLE, "\n".join(tool_lines)]))
            parts.append(_turn("system", content))
        elif role == "assistant":
            calls = [_render_call(call) for call in message.get("tool_calls") or ()]
            parts.append(_turn("assistant", content + "".join(calls)))
        elif role == "tool":
            name = names.get(message.get("tool_call_id"), "tool")
            parts.append(_turn("user", f'<tool_response name="{name}">\n{content}\n</tool_response>'))
        else:
            parts.append(_turn("user" if role != "system" else "system", content))
    if tool_lines and not system_seen:
        parts.insert(0, _turn("system", f"{TOOLS_PREAMBLE}\n" + "\n".join(tool_lines)))
    return "".join(parts) + "<|im_start|>assistant\n"


def call_schema(tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Return the JSON schema of one call to any of ``tools``: ``{"name": <const>, "arguments": {...}}``."""
    options = [
        {
            "type": "object",
            "properties": {
                "name": {"const": tool["function"]["name"]},
                "arguments": tool["function"].get("parameters") or {"type": "object", "properties": {}},
            },
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for tool in tools
    ]
    return options[0] if len(options) == 1 else {"anyOf": options}


def tool_call_handler(
    llama: Any,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    tool_choice: str | dict[str, Any] | None = None,
    temperature: float = 0.2,
    max_tokens: int | None = None,
    stream: bool = False,
    seed: int | None = None,
    **sampling: Any,
) -> dict[str, Any]:
    """Answer one chat completion request (llama-cpp-python's chat handler signature)."""
    grammars = _llama_module("llama_cpp.llama_grammar")
    if stream:
        raise ValueError(f"the {HANDLER_NAME} chat format does not stream")
    limit = max_tokens or DEFAULT_MAX_TOKENS
    offered = _offered(tools or [], tool_choice)
    prompt = render_prompt(messages, offered if tool_choice != "none" else None)
    common: dict[str, Any] = {
        "temperature": temperature,
        "seed": seed,
        "stop": ["<|im_end|>"],
        **{key: sampling[key] for key in SAMPLING if sampling.get(key) is not None},
    }
    used = 0
    if offered and tool_choice == "auto":
        choice = llama.create_completion(
            prompt=prompt,
            max_tokens=8,
            grammar=grammars.LlamaGrammar.from_string(
                f'root ::= "{CALL_OPEN.strip()}" | "{ANSWER}"', verbose=False
            ),
            **{**common, "temperature": 0.0},
        )
        used += choice["usage"]["completion_tokens"]
        if ANSWER in choice["choices"][0]["text"]:
            offered = []
            prompt += f"{ANSWER} "
    if not offered:
        text = llama.create_completion(prompt=prompt, max_tokens=limit, **common)
        return _response(text, content=text["choices"][0]["text"].strip(), calls=[], extra=used)
    grammar = grammars.LlamaGrammar.from_json_schema(json.dumps(call_schema(offered)), verbose=False)
    completion = llama.create_completion(
        prompt=prompt + CALL_OPEN, max_tokens=limit, grammar=grammar, **common
    )
    raw = completion["choices"][0]["text"]
    return _response(completion, content=None, calls=[_parse_call(raw, offered)], extra=used)


def _offered(tools: list[dict[str, Any]], tool_choice: str | dict[str, Any] | None) -> list[dict[str, Any]]:
    if isinstance(tool_choice, dict):
        name = tool_choice.get("function", {}).get("name")
        chosen = [tool for tool in tools if tool["function"]["name"] == name]
        if not chosen:
            raise ValueError(f"tool_choice names {name!r}, which is not among the tools")
        return chosen
    return [] if tool_choice == "none" else tools


def _parse_call(raw: str, offered: list[dict[str, Any]]) -> dict[str, Any]:
    """Turn the grammar-decoded text into an OpenAI tool call (arguments re-serialised as JSON)."""
    call_id = f"call_{uuid.uuid4().hex[:24]}"
    try:
        # strict=False: the grammar lets raw control characters into strings; JSON forbids them.
        value = json.loads(raw, strict=False)
        name, arguments = str(value["name"]), json.dumps(value["arguments"], ensure_ascii=False)
    except (json.JSONDecodeError, KeyError, TypeError):
        # Cut off by max_tokens: hand back what was written; the client reports the bad JSON.
        name = next((t["function"]["name"] for t in offered if f'"{t["function"]["name"]}"' in raw), "")
        arguments = raw
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _response(
    completion: dict[str, Any], *, content: str | None, calls: list[dict[str, Any]], extra: int
) -> dict[str, Any]:
    usage = dict(completion["usage"])
    usage["completion_tokens"] += extra
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": f"chat{completion['id']}",
        "object": "chat.completion",
        "created": completion.get("created", int(time.time())),
        "model": completion["model"],
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if calls else completion["choices"][0]["finish_reason"],
            }
        ],
        "usage": usage,
    }


def _render_call(call: Mapping[str, Any]) -> str:
    function = call.get("function", {})
    try:
        arguments: Any = json.loads(function.get("arguments") or "{}")
    except json.JSONDecodeError:
        arguments = function.get("arguments")
    body = json.dumps({"name": function.get("name"), "arguments": arguments}, ensure_ascii=False)
    return f"{CALL_OPEN}{body}{CALL_CLOSE}"


def _turn(role: str, content: str) -> str:
    return f"<|im_start|>{role}\n{content}<|im_end|>\n"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def main() -> None:
    """Register the handler, then run llama-cpp-python's server with the command-line arguments."""
    registry = _llama_module("llama_cpp.llama_chat_format").LlamaChatCompletionHandlerRegistry()
    registry.register_chat_completion_handler(HANDLER_NAME, tool_call_handler, overwrite=True)
    _llama_module("llama_cpp.server.__main__").main()


def _llama_module(name: str) -> Any:
    # Imported when used: llama-cpp-python is an optional extra (`make install-local-llm`).
    return importlib.import_module(name)


if __name__ == "__main__":
    main()
