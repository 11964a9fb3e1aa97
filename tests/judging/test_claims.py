"""judging.claims: ids named in a text, found without a regex per call, as the alternation found them."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from judging.claims import named_spans

_IDS = st.lists(st.sampled_from(["10", "101", "1010", "a1", "A1", "1001", "10-1", "x"]), max_size=5)
_TEXT = st.text(alphabet="01aAx -.,:\n", max_size=40)


def _alternation(text: str, ids: list[str]) -> list[tuple[int, int, str]]:
    """The definition: one regex of the ids, longest first, each a whole token."""
    wanted = sorted(set(ids), key=len, reverse=True)
    if not wanted:
        return []
    pattern = re.compile(r"(?<![0-9A-Za-z])(" + "|".join(re.escape(i) for i in wanted) + r")(?![0-9A-Za-z])")
    return [(m.start(), m.end(), m.group(1)) for m in pattern.finditer(text)]


@settings(max_examples=400, deadline=None)
@given(text=_TEXT, ids=_IDS)
def test_named_spans_are_the_alternations_matches(text: str, ids: list[str]) -> None:
    assert named_spans(text, ids) == _alternation(text, ids)


def test_the_longest_id_at_a_place_wins_and_tokens_stay_whole() -> None:
    text = "1010 and 10, not 101x or x101; 1001."
    spans = named_spans(text, ["10", "1010", "101", "1001"])
    assert spans == [(0, 4, "1010"), (9, 11, "10"), (31, 35, "1001")]
