import subprocess
import sys

import pytest

from arena.analysis import MAX_QUERY_TERMS, STOP_WORDS, analyze, query_terms, tokenize


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Nike Air-Zoom, 2-pack!", ["Nike", "Air", "Zoom", "2", "pack"]),
        ("3.5mm jack 1,000 pcs 12.5x", ["3.5mm", "jack", "1,000", "pcs", "12.5x"]),
        ("women's U.S.A. e.g. can't", ["women's", "U.S.A", "e.g", "can't"]),
        ("men’s  50%  $5.99  (4/4)", ["men’s", "50", "5.99", "4", "4"]),
        ("snake_case iPhone13 wi-fi", ["snake_case", "iPhone13", "wi", "fi"]),
        ("漢字かなカタカナ", ["漢", "字", "か", "な", "カタカナ"]),
        ("สวัสดีครับ café naïve", ["สวัสดีครับ", "café", "naïve"]),
        ("hot 🔥 deal", ["hot", "🔥", "deal"]),
        ("...---!!!", []),
        ("", []),
    ],
)
def test_tokenize_follows_word_boundaries(text: str, tokens: list[str]) -> None:
    assert tokenize(text) == tokens


def test_long_tokens_are_split_at_255_characters() -> None:
    assert [len(t) for t in tokenize("x" * 600)] == [255, 255, 90]


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("Running Shoes for Women", ["run", "shoe", "women"]),
        ("women's WOMEN'S men’s", ["women", "women", "men"]),
        ("The Cymbals of the Band", ["cymbal", "band"]),
        ("generalization possibly archaeology", ["gener", "possibl", "archaeolog"]),
        ("Heavy-Duty Wheels 12 inches", ["heavi", "duti", "wheel", "12", "inch"]),
    ],
)
def test_analyze_strips_possessives_lowercases_drops_stop_words_and_stems(
    text: str, terms: list[str]
) -> None:
    assert analyze(text) == terms


def test_stop_words_are_lucenes_33() -> None:
    assert len(STOP_WORDS) == 33
    assert analyze(" ".join(sorted(STOP_WORDS)).upper()) == []


def test_query_terms_count_repeats_and_cap_distinct_terms() -> None:
    assert query_terms("shoes shoe SHOES running") == {"shoe": 3, "run": 1}
    many = query_terms(" ".join(f"w{i}" for i in range(MAX_QUERY_TERMS + 50)))
    assert len(many) == MAX_QUERY_TERMS and "w0" in many and f"w{MAX_QUERY_TERMS}" not in many


def test_importing_the_tools_does_not_load_nltk() -> None:
    # nltk pulls in scipy (about 0.6 s): a miner or `arena --help` that never stems must not pay it.
    code = "import sys, arena.tools, arena.index; sys.exit('nltk' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
