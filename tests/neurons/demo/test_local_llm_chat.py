"""The local server's tool-calling chat handler: prompt rendering, call grammar, responses (fake llama)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from neurons.demo import local_llm_chat
from neurons.demo.chatml import render_prompt
from neurons.demo.local_llm_chat import call_schema, tool_call_handler

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "find_product",
            "description": "Search.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "terminate",
            "description": "End.",
            "parameters": {
                "type": "object",
                "properties": {"status": {"type": "string"}},
                "required": ["status"],
            },
        },
    },
]
CONVERSATION = [
    {"role": "system", "content": "Be helpful."},
    {"role": "user", "content": 'Find "red" shoes <cheap> & fast'},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "find_product", "arguments": '{"q": "red shoes"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": '[{"product_id": "1", "title": "Red \\"Shoe\\""}]'},
]


def test_the_prompt_is_chatml_with_tools_and_results_and_no_escaping() -> None:
    prompt = render_prompt(CONVERSATION, TOOLS)
    assert prompt.startswith("<|im_start|>system\nBe helpful.\n\nYou can call these tools.")
    assert json.dumps(TOOLS[0]["function"]) in prompt
    assert '<|im_start|>user\nFind "red" shoes <cheap> & fast<|im_end|>' in prompt
    assert (
        '<tool_call>\n{"name": "find_product", "arguments": {"q": "red shoes"}}\n</tool_call><|im_end|>'
        in prompt
    )
    assert (
        '<tool_response name="find_product">\n' + CONVERSATION[3]["content"] + "\n</tool_response>" in prompt
    )
    assert "&#34;" not in prompt and "&quot;" not in prompt
    assert prompt.endswith("<|im_start|>assistant\n")


def test_without_tools_the_prompt_lists_none() -> None:
    assert "You can call these tools" not in render_prompt(CONVERSATION[:2], None)


def test_the_call_schema_names_each_tool_and_its_arguments() -> None:
    schema = call_schema(TOOLS)
    assert [option["properties"]["name"] for option in schema["anyOf"]] == [
        {"const": "find_product"},
        {"const": "terminate"},
    ]
    assert schema["anyOf"][0]["properties"]["arguments"] == TOOLS[0]["function"]["parameters"]
    assert call_schema(TOOLS[:1])["properties"]["name"] == {"const": "find_product"}


class FakeLlama:
    """Answers create_completion with scripted texts; records prompts and grammars."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.calls: list[dict[str, Any]] = []

    def create_completion(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        text = self.texts.pop(0)
        return {
            "id": "cmpl-1",
            "created": 1,
            "model": "fake",
            "choices": [{"text": text, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57},
        }


@pytest.fixture(autouse=True)
def fake_grammars(monkeypatch: pytest.MonkeyPatch) -> None:
    grammar = SimpleNamespace(
        from_string=lambda text, verbose=False: ("gbnf", text),
        from_json_schema=lambda text, verbose=False: ("schema", json.loads(text)),
    )
    monkeypatch.setattr(local_llm_chat, "_llama_module", lambda name: SimpleNamespace(LlamaGrammar=grammar))


def test_required_decodes_one_call_to_any_tool_under_the_call_grammar() -> None:
    llama = FakeLlama('{"name": "find_product", "arguments": {"q": "red\nshoes"}}')
    response = tool_call_handler(llama, CONVERSATION[:2], tools=TOOLS, tool_choice="required", max_tokens=99)
    (call,) = llama.calls
    assert call["prompt"].endswith("<|im_start|>assistant\n<tool_call>\n")
    assert call["grammar"] == ("schema", call_schema(TOOLS))
    assert call["max_tokens"] == 99
    message = response["choices"][0]["message"]
    assert response["choices"][0]["finish_reason"] == "tool_calls"
    (tool_call,) = message["tool_calls"]
    assert tool_call["function"]["name"] == "find_product"
    assert json.loads(tool_call["function"]["arguments"]) == {
        "q": "red\nshoes"
    }  # control character re-escaped
    assert tool_call["id"].startswith("call_")
    assert response["usage"] == {"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57}


def test_a_named_tool_choice_offers_only_that_tool() -> None:
    llama = FakeLlama('{"name": "terminate", "arguments": {"status": "success"}}')
    tool_call_handler(
        llama,
        CONVERSATION[:2],
        tools=TOOLS,
        tool_choice={"type": "function", "function": {"name": "terminate"}},
    )
    assert llama.calls[0]["grammar"] == ("schema", call_schema(TOOLS[1:]))
    with pytest.raises(ValueError, match="not among the tools"):
        tool_call_handler(
            FakeLlama(),
            CONVERSATION[:2],
            tools=TOOLS,
            tool_choice={"type": "function", "function": {"name": "x"}},
        )


def test_auto_lets_the_model_answer_in_text() -> None:
    llama = FakeLlama("Answer:", "I could not find it.")
    response = tool_call_handler(llama, CONVERSATION[:2], tools=TOOLS, tool_choice="auto")
    assert llama.calls[0]["grammar"][0] == "gbnf"
    assert llama.calls[1]["prompt"].endswith("Answer: ")
    assert "grammar" not in llama.calls[1]
    message = response["choices"][0]["message"]
    assert message["content"] == "I could not find it." and "tool_calls" not in message
    assert response["usage"]["completion_tokens"] == 14


def test_auto_can_choose_a_tool_call() -> None:
    llama = FakeLlama("<tool_call>", '{"name": "terminate", "arguments": {"status": "failure"}}')
    response = tool_call_handler(llama, CONVERSATION[:2], tools=TOOLS, tool_choice="auto")
    assert response["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "terminate"


def test_a_cut_off_call_is_returned_raw_for_the_client_to_report() -> None:
    llama = FakeLlama('{"name": "find_product", "arguments": {"q": "red sh')
    response = tool_call_handler(llama, CONVERSATION[:2], tools=TOOLS, tool_choice="required")
    function = response["choices"][0]["message"]["tool_calls"][0]["function"]
    assert function["name"] == "find_product"
    with pytest.raises(json.JSONDecodeError):
        json.loads(function["arguments"])


def test_sampling_fields_pass_through_and_streaming_is_refused() -> None:
    llama = FakeLlama("hello")
    tool_call_handler(llama, CONVERSATION[:2], tools=None, repeat_penalty=1.3, top_k=None)
    assert llama.calls[0]["repeat_penalty"] == 1.3 and "top_k" not in llama.calls[0]
    with pytest.raises(ValueError, match="stream"):
        tool_call_handler(FakeLlama(), CONVERSATION[:2], stream=True)


def test_thinking_writes_a_thought_then_the_call_after_it() -> None:
    llama = FakeLlama("Search for red shoes first.", '{"name": "find_product", "arguments": {"q": "red"}}')
    response = tool_call_handler(
        llama, CONVERSATION[:2], tools=TOOLS, tool_choice="required", think=True, observations="compact"
    )
    thought_call, call = llama.calls
    assert "grammar" not in thought_call and thought_call["stop"] == ["<tool_call>", "<|im_end|>"]
    assert call["prompt"] == thought_call["prompt"] + "Search for red shoes first.<tool_call>\n"
    message = response["choices"][0]["message"]
    assert message["content"] == "Search for red shoes first."
    assert message["tool_calls"][0]["function"]["name"] == "find_product"
    assert response["usage"]["completion_tokens"] == 14
