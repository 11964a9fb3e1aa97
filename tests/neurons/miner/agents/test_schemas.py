"""Tightened tool schemas for grammar-constrained decoding."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from neurons.miner.agents.schemas import constrain_schema, constrain_tool_schemas

FIND = {
    "type": "function",
    "function": {
        "name": "find_product",
        "parameters": {
            "type": "object",
            "properties": {
                "q": {"type": "string", "description": "keywords", "minLength": 1},
                "page": {"type": "integer", "minimum": 1, "maximum": 5, "default": 1},
                "shop_id": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
                "sort": {"type": "string", "enum": ["priceasc", "pricedesc"]},
                "price": {"type": "string", "pattern": "^\\d*-\\d*$"},
                "big": {"type": "integer", "minimum": 0, "maximum": 10_000},
            },
            "required": ["q", "page"],
        },
    },
}


def test_free_strings_get_a_bounded_pattern_without_quotes_or_control_characters() -> None:
    (tool,) = constrain_tool_schemas([FIND], max_string=30)
    props: dict[str, Any] = tool["function"]["parameters"]["properties"]
    pattern = re.compile(props["q"]["pattern"])
    assert "minLength" not in props["q"]
    assert pattern.fullmatch("red running shoes")
    assert not pattern.fullmatch("")  # minLength 1 kept
    assert not pattern.fullmatch("x" * 31)
    assert (
        not pattern.fullmatch('say "hi"') and not pattern.fullmatch("a\nb") and not pattern.fullmatch("a\\b")
    )
    assert re.compile(props["shop_id"]["anyOf"][0]["pattern"]).fullmatch("s1")
    assert props["shop_id"]["anyOf"][1] == {"type": "null"}


def test_enums_patterns_and_values_are_left_alone() -> None:
    (tool,) = constrain_tool_schemas([FIND], max_string=30)
    props = tool["function"]["parameters"]["properties"]
    assert props["sort"] == FIND["function"]["parameters"]["properties"]["sort"]  # type: ignore[index]
    assert props["price"]["pattern"] == "^\\d*-\\d*$"
    assert props["page"]["default"] == 1
    assert tool["function"]["parameters"]["required"] == ["q", "page"]


def test_small_integer_ranges_become_enums_and_large_ones_do_not() -> None:
    (tool,) = constrain_tool_schemas([FIND], max_string=30)
    props = tool["function"]["parameters"]["properties"]
    assert props["page"]["enum"] == [1, 2, 3, 4, 5]
    assert "enum" not in props["big"]


def test_the_input_is_not_modified() -> None:
    before = copy.deepcopy(FIND)
    constrain_tool_schemas([FIND], max_string=10)
    assert before == FIND


def test_nested_definitions_are_tightened() -> None:
    schema = {
        "type": "object",
        "$defs": {"Item": {"type": "string"}},
        "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}},
    }
    out = constrain_schema(schema, 8)
    assert out["$defs"]["Item"]["pattern"].endswith("{0,8}$")
    assert out["properties"]["items"]["items"] == {"$ref": "#/$defs/Item"}
    json.dumps(out)
