"""JSON nesting depth without parsing: the guard the tool server, miner and client run first."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.jsondepth import JsonDepthGuard, deeper_than, json_depth


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ('"just a string"', 0),
        ("[]", 1),
        ('{"a": [1, {"b": []}]}', 4),
        ('{"a": "[[[[{{{{"}', 1),  # brackets inside strings do not count
        ('{"a": "quote \\" [[[ still a string"}', 1),  # an escaped quote does not end the string
        ('["\\\\", [[]]]', 3),  # an escaped backslash does not escape the closing quote
    ],
)
def test_json_depth(text: str, depth: int) -> None:
    assert json_depth(text.encode()) == depth
    assert json_depth(text.encode()) == _parsed_depth(json.loads(text))


def test_depth_guard_stops_at_the_cap() -> None:
    guard = JsonDepthGuard(max_depth=3)
    assert guard.feed(b"[[[")
    assert not guard.feed(b"[")


def _parsed_depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((_parsed_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_parsed_depth(v) for v in value), default=0)
    return 0


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='ab"\\[]{}\n', max_size=6),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=20,
)


@settings(deadline=None)  # no test depends on timing: a loaded machine misses hypothesis's 200 ms
@given(value=_json, cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=6))
def test_depth_guard_agrees_with_a_parser_however_the_body_is_chunked(value: object, cuts: list[int]) -> None:
    body = json.dumps(value).encode()
    guard = JsonDepthGuard(max_depth=1000)
    edges = sorted({0, len(body), *(cut % (len(body) + 1) for cut in cuts)})
    for start, end in zip(edges, edges[1:], strict=False):
        guard.feed(body[start:end])
    assert guard.deepest == _parsed_depth(value)


def test_json_depth_ignores_brackets_in_strings() -> None:
    assert json_depth(b'{"a": "[[[[{{{", "b": [1, {"c": "\\"]]"}]}') == 3
    assert json_depth(b"") == 0
    assert json_depth(b'"' + b'\\"' * 10_000) == 0


@settings(deadline=None)
@given(value=_json, max_depth=st.integers(min_value=0, max_value=6))
def test_deeper_than_is_json_depth_over_the_cap(value: object, max_depth: int) -> None:
    body = json.dumps(value).encode()
    assert deeper_than(body, max_depth) == (json_depth(body) > max_depth)


def test_deeper_than_counts_brackets_in_strings_only_as_a_reason_to_scan() -> None:
    assert not deeper_than(b'{"a": "[[[[[[[[[["}', 2)  # ten openers, depth 1
    assert deeper_than(b"[[[]]]", 2) and not deeper_than(b"[[[]]]", 3)
