"""The local model's rendering: segments marked as its own turns, raw and compact tool results."""

from __future__ import annotations

import json

from neurons.demo.chatml import ASSISTANT_OPEN, render_observation, render_prompt, render_segments

HITS = [
    {
        "product_id": "11",
        "shop_id": "s1",
        "title": "Red Shoe",
        "price": 99.5,
        "service": ["COD"],
        "sold_count": 3,
    },
    {
        "product_id": "12",
        "shop_id": "s2",
        "title": "Blue Shoe",
        "price": 10.0,
        "service": [],
        "sold_count": 0,
    },
]
DETAILS = [
    {
        "product_id": "11",
        "short_description": "Nice.",
        "description": "Long text nobody checks.",
        "sku_options": {"1": {"color": "red", "size": "M"}},
        "attributes": {"material": ["leather", "rubber"]},
    }
]
CONVERSATION = [
    {"role": "system", "content": "Be helpful."},
    {"role": "user", "content": "red shoes"},
    {
        "role": "assistant",
        "content": None,
        "reasoning_content": "The user wants red shoes; search for them.",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "find_product", "arguments": '{"q": "red shoes"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": json.dumps(HITS)},
]


def test_search_hits_render_one_line_each_with_every_field_the_constraints_need() -> None:
    text = render_observation("find_product", json.dumps(HITS))
    assert text.splitlines() == [
        "id 11 | shop s1 | Red Shoe | price 99.5 | services COD | sold 3",
        "id 12 | shop s2 | Blue Shoe | price 10.0 | services none | sold 0",
    ]


def test_details_keep_attributes_and_options_and_drop_descriptions() -> None:
    text = render_observation("view_product_information", json.dumps(DETAILS))
    assert text == "id 11 | attributes material=leather, rubber | options 1: color=red, size=M"
    assert "nobody checks" not in text


def test_anything_else_is_shown_raw() -> None:
    for content in ('"Recommended to the user: 11."', "error: bad page", "[]", '[{"x": 1}]'):
        assert render_observation("recommend_product", content) == content


def test_only_assistant_turns_are_the_models_own_and_the_thought_comes_before_the_call() -> None:
    segments = render_segments(CONVERSATION, None, observations="compact")
    own = [s.text for s in segments if s.own]
    assert own == [
        'The user wants red shoes; search for them.<tool_call>\n{"name": "find_product", "arguments": '
        '{"q": "red shoes"}}\n</tool_call><|im_end|>\n'
    ]
    joined = "".join(s.text for s in segments)
    assert "id 11 | shop s1" in joined and '"product_id"' not in joined
    assert render_prompt(CONVERSATION, None, observations="compact") == joined + ASSISTANT_OPEN


def test_raw_rendering_shows_the_result_verbatim() -> None:
    assert json.dumps(HITS) in render_prompt(CONVERSATION, None)


def test_a_compact_listing_names_each_tool_and_argument_on_a_line() -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "find_product",
                "description": "Search the catalog. Long details follow.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "q": {"type": "string", "description": "Keywords, e.g. shoes."},
                        "page": {"type": "integer", "enum": [1, 2], "description": "Page."},
                    },
                    "required": ["q"],
                },
            },
        }
    ]
    prompt = render_prompt([], tools, listing="compact")
    assert "- find_product: Search the catalog.\n" in prompt
    assert "  q (string, required): Keywords, e.g. shoes.\n" in prompt
    assert "  page (1|2, optional): Page." in prompt
    assert "Long details follow" not in prompt
