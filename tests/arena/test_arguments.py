"""Tool-call arguments read once, by one parser (the tool server's and the trajectory's): the rules."""

from __future__ import annotations

import json

import pytest

from arena.arguments import ArgumentError, loads_finite, parse_arguments, split_product_ids
from arena.types import FunctionCall


@pytest.mark.parametrize("text", ["", "   ", "\n"])
def test_an_empty_argument_string_means_no_arguments(text: str) -> None:
    assert parse_arguments(text) == {}


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        ('{"q": "shoes"', "not_json"),
        ('{"page": NaN}', "not_json"),
        ('{"page": -Infinity}', "not_json"),
        ("[1, 2]", "not_object"),
        ('"shoes"', "not_object"),
        ("[" * 5000 + "]" * 5000, "not_json"),
        ('{"q": "' + "x" * 20_000 + '"}', "too_long"),
    ],
)
def test_what_is_not_one_finite_json_object_is_a_typed_error(text: str, cause: str) -> None:
    parsed = parse_arguments(text)
    assert isinstance(parsed, ArgumentError) and parsed.cause == cause and str(parsed) == parsed.detail


@pytest.mark.parametrize(
    "text", ['{"q": "tent", "q": "shoes"}', '{"q": "tent", "filters": {"a": 1, "a": 2}}']
)
def test_a_repeated_key_is_refused_not_read_as_its_last_value(text: str) -> None:
    parsed = parse_arguments(text)
    assert isinstance(parsed, ArgumentError) and parsed.cause == "duplicate_key"
    assert "duplicate key" in parsed.detail


def test_a_call_is_read_once_and_the_read_follows_its_text() -> None:
    call = FunctionCall(name="find_product", arguments='{"q": "tent"}')
    assert call.parsed is call.parsed == {"q": "tent"}
    other = call.model_copy(update={"arguments": "[1]"})
    assert isinstance(other.parsed, ArgumentError) and call.parsed == {"q": "tent"}
    assert call == FunctionCall(name="find_product", arguments='{"q": "tent"}')  # the cache is no field
    assert call.model_dump() == {"name": "find_product", "arguments": '{"q": "tent"}'}


@pytest.mark.parametrize(
    ("raw", "ids", "error"),
    [
        ("1001, 1002 ,1001,", ("1001", "1002"), None),
        (["1001", 1002, " 1001 "], ("1001", "1002"), None),
        (" , ", (), "product_ids is empty"),
        (1001, (), "product_ids is a int, not a string or list"),
        (["1001", True], (), "product id True is not a string"),
        (None, (), "product_ids is a NoneType, not a string or list"),
    ],
)
def test_product_ids_are_trimmed_deduplicated_and_checked(
    raw: object, ids: tuple[str, ...], error: str | None
) -> None:
    assert split_product_ids(raw) == (ids, error)


def test_loads_finite_refuses_non_finite_literals() -> None:
    assert loads_finite('{"a": 1.5}') == {"a": 1.5}
    for text in ("NaN", '{"a": Infinity}', "[-Infinity]"):
        with pytest.raises(ValueError, match="not allowed"):
            loads_finite(text)
    assert json.loads("NaN") != json.loads("NaN")  # what the stdlib decoder would have let through


@pytest.mark.parametrize(
    "text",
    [
        '{"q": "\\ud800"}',  # a lone high surrogate
        '{"product_ids": "\\udfff"}',  # a lone low surrogate
        '{"\\ud800": "shoes"}',  # in a key
        '{"q": "tent", "sku": ["red", {"size": "a\\udc00b"}]}',  # nested
        '{"q": "\\udc00\\ud800"}',  # a pair in the wrong order is two lone surrogates
        '{"q": "shoes \ud800"}',  # the text itself carries one (a caller in Python)
    ],
)
def test_text_that_cannot_be_encoded_is_refused_as_arguments(text: str) -> None:
    parsed = parse_arguments(text)
    assert isinstance(parsed, ArgumentError) and parsed.cause == "not_text"
    assert "surrogate" in parsed.detail
    parsed.detail.encode("utf-8")  # the reason itself is always encodable


def test_a_surrogate_pair_is_one_character_and_welcome() -> None:
    assert parse_arguments('{"q": "tent \\ud83c\\udfd5"}') == {"q": "tent \U0001f3d5"}
