"""Duplicate keys in JSON texts: found anywhere in the document, named, and refused by the parser."""

from __future__ import annotations

import json

import pytest

from arena.jsonkeys import DuplicateKey, duplicate_key, unique_object


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('{"a": 1, "a": 2}', "a"),
        ('{"a": {"b": 1, "c": 2, "b": 3}}', "b"),
        ('[{"x": 1}, {"y": 1, "y": 1}]', "y"),
        ('{"\\u0061": 1, "a": 2}', "a"),  # an escaped spelling is the same key
    ],
)
def test_a_repeated_key_at_any_depth_is_named(text: str, key: str) -> None:
    assert duplicate_key(text) == key
    assert duplicate_key(text.encode()) == key


@pytest.mark.parametrize("text", ['{"a": 1, "b": {"a": 2}}', "[]", '"a"', "{}", '[{"a": 1}, {"a": 2}]'])
def test_distinct_keys_pass(text: str) -> None:
    assert duplicate_key(text) is None


def test_text_that_is_not_json_is_not_this_checks_business() -> None:
    assert duplicate_key('{"a": ') is None
    assert duplicate_key(b"\xff") is None


def test_the_pairs_hook_refuses_a_repeat_and_builds_the_object_otherwise() -> None:
    assert json.loads('{"a": 1, "b": 2}', object_pairs_hook=unique_object) == {"a": 1, "b": 2}
    with pytest.raises(DuplicateKey) as caught:
        json.loads('{"a": 1, "a": 2}', object_pairs_hook=unique_object)
    assert caught.value.key == "a" and isinstance(caught.value, ValueError)
