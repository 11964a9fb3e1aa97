"""Training rows: rendered as the local server renders them, loss on the model's own turns only."""

from __future__ import annotations

import json
from typing import Any

from neurons.demo.chatml import render_prompt
from neurons.learning.rows import render_example, render_rows, strip_thoughts

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "find_product",
            "description": "Search.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
        },
    }
]
HITS = [
    {"product_id": "7", "shop_id": "s", "title": "Red Shoe", "price": 9.0, "service": [], "sold_count": 1}
]
ROW = {
    "messages": [
        {"role": "system", "content": "Shop."},
        {"role": "user", "content": "red shoes"},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "Search for red shoes.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "find_product", "arguments": {"q": "red"}},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "find_product", "content": json.dumps(HITS)},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "terminate", "arguments": {"status": "success"}},
                }
            ],
        },
    ],
    "tools": TOOLS,
}


class CharTokenizer:
    """One token per character: enough to check which characters carry the loss."""

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, Any]:
        return {"input_ids": [ord(c) for c in text]}


def text_of(ids: tuple[int, ...], mask: tuple[int, ...], own: int) -> str:
    return "".join(chr(i) for i, m in zip(ids, mask, strict=True) if m == own)


def test_the_example_is_exactly_the_servers_prompt_and_only_assistant_turns_carry_the_loss() -> None:
    example = render_example(ROW["messages"], TOOLS, CharTokenizer())
    whole = "".join(chr(i) for i in example.input_ids)
    served = render_prompt(
        strip_thoughts(ROW["messages"][:4]), TOOLS, observations="compact", listing="compact"
    )
    assert whole.startswith(served)  # the context before the second turn is what the server shows
    taught = text_of(example.input_ids, example.assistant_masks, 1)
    assert taught == (
        '<tool_call>\n{"name": "find_product", "arguments": {"q": "red"}}\n</tool_call><|im_end|>\n'
        '<tool_call>\n{"name": "terminate", "arguments": {"status": "success"}}\n</tool_call><|im_end|>\n'
    )
    assert "Search for red shoes" not in whole  # thoughts are left out unless asked for
    assert "id 7 | shop s | Red Shoe" in text_of(example.input_ids, example.assistant_masks, 0)


def test_with_thoughts_the_reasoning_is_taught_before_the_call() -> None:
    example = render_example(ROW["messages"], TOOLS, CharTokenizer(), thoughts=True)
    assert text_of(example.input_ids, example.assistant_masks, 1).startswith(
        "Search for red shoes.<tool_call>"
    )


def test_rows_too_long_or_without_a_turn_are_counted_not_truncated() -> None:
    no_turn = {"messages": ROW["messages"][:2], "tools": TOOLS}
    full = render_example(ROW["messages"], TOOLS, CharTokenizer())
    rendered = render_rows([ROW, no_turn], TOOLS, CharTokenizer(), max_tokens=len(full.input_ids))
    assert len(rendered.examples) == 1 and rendered.no_assistant_turn == 1
    short = render_rows([ROW], TOOLS, CharTokenizer(), max_tokens=len(full.input_ids) - 1)
    assert short.examples == () and short.too_long == 1
