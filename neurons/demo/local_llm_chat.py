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

import functools
import importlib
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from neurons.demo.chatml import CALL_OPEN, END, Observations, ToolListing, render_prompt

HANDLER_NAME = "arena-tools"
# The learning benchmark's variants: tools listed a line per argument and tool results compact
# (neurons/demo/chatml.py), and optionally a short free-text thought before each call.
COMPACT_HANDLER_NAME = "arena-tools-compact"
THINKING_HANDLER_NAME = "arena-tools-thinking"
ANSWER = "Answer:"
THOUGHT_TOKENS = 96
DEFAULT_MAX_TOKENS = 256
# Request fields passed through to llama.cpp's sampler when the client sets them.
SAMPLING = ("top_p", "top_k", "min_p", "repeat_penalty", "presence_penalty", "frequency_penalty")


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
    *,
    observations: Observations = "raw",
    listing: ToolListing = "json",
    think: bool = False,
    **sampling: Any,
) -> dict[str, Any]:
    """Answer one chat completion request (llama-cpp-python's chat handler signature).

    ``observations``, ``listing`` and ``think`` are fixed per registered handler name (see :func:`main`): with
    ``think``, a call the request requires is preceded by up to ``THOUGHT_TOKENS`` of free text,
    returned as the message content.
    """
    grammars = _llama_module("llama_cpp.llama_grammar")
    if stream:
        raise ValueError(f"the {HANDLER_NAME} chat format does not stream")
    limit = max_tokens or DEFAULT_MAX_TOKENS
    offered = _offered(tools or [], tool_choice)
    shown = offered if tool_choice != "none" else None
    prompt = render_prompt(messages, shown, observations=observations, listing=listing)
    common: dict[str, Any] = {
        "temperature": temperature,
        "seed": seed,
        "stop": [END],
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
    thought = ""
    if think:
        reply = llama.create_completion(
            prompt=prompt, max_tokens=THOUGHT_TOKENS, **{**common, "stop": [CALL_OPEN.strip(), END]}
        )
        used += reply["usage"]["completion_tokens"]
        thought = reply["choices"][0]["text"]
    grammar = grammars.LlamaGrammar.from_json_schema(json.dumps(call_schema(offered)), verbose=False)
    completion = llama.create_completion(
        prompt=prompt + thought + CALL_OPEN, max_tokens=limit, grammar=grammar, **common
    )
    raw = completion["choices"][0]["text"]
    content = thought.strip() or None
    return _response(completion, content=content, calls=[_parse_call(raw, offered)], extra=used)


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


def main() -> None:
    """Register the handler, then run llama-cpp-python's server with the command-line arguments."""
    registry = _llama_module("llama_cpp.llama_chat_format").LlamaChatCompletionHandlerRegistry()
    registry.register_chat_completion_handler(HANDLER_NAME, tool_call_handler, overwrite=True)
    compact = functools.partial(tool_call_handler, observations="compact", listing="compact")
    registry.register_chat_completion_handler(COMPACT_HANDLER_NAME, compact, overwrite=True)
    thinking = functools.partial(compact, think=True)
    registry.register_chat_completion_handler(THINKING_HANDLER_NAME, thinking, overwrite=True)
    _llama_module("llama_cpp.server.__main__").main()


def _llama_module(name: str) -> Any:
    # Imported when used: llama-cpp-python is an optional extra (`make install-local-llm`).
    return importlib.import_module(name)


if __name__ == "__main__":
    main()
