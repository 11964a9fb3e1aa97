"""Text analysis for the search index: a Python rendering of Anserini's default English analyzer.

ShoppingBench indexes and queries with pyserini's defaults, i.e. Lucene's ``StandardTokenizer``
followed by ``EnglishPossessiveFilter``, ``LowerCaseFilter``, a ``StopFilter`` with Lucene's
33 English stop words, and ``PorterStemFilter``. This module reproduces that chain:

- tokenisation approximates Unicode word boundaries (UAX #29) as StandardTokenizer applies them:
  runs of letters, digits, marks and ``_``; a single ``'`` ``.`` ``:`` (and their variants)
  joins two letters, a single ``,`` ``.`` ``;`` ``'`` joins two digits (``3.5mm``, ``1,000``,
  ``women's``, ``u.s.a``); every Han ideograph and Hiragana character is its own token; emoji
  are tokens; everything else (``-``, ``/``, ``%``, quotes, brackets, ``+`` ...) separates;
- tokens longer than 255 characters are split, as StandardTokenizer's default maximum does;
- stemming is NLTK's Porter stemmer in Martin Porter's reference mode, the variant Lucene ports.

There is no query syntax at all: a query is analysed exactly like a document and its terms
are OR-ed (pyserini's bag-of-words query generator), so no input can inject operators,
field names, wildcards or phrases, and no input can fail to parse.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

import regex

ANALYZER = "lucene-standard+possessive+lowercase+stop33+porter/1"
MAX_TOKEN_CHARS = 255
# Lucene's IndexSearcher refuses boolean queries with more clauses than this.
MAX_QUERY_TERMS = 1024

# Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET.
STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with".split()
)

_WORD_CHAR = r"[\p{L}\p{M}\p{N}\p{Pc}--[\p{Han}\p{Hiragana}]]"
_LETTER = r"[\p{L}\p{M}--[\p{Han}\p{Hiragana}]]"
_TOKEN = regex.compile(
    r"[\p{Han}\p{Hiragana}]"
    r"|\p{Extended_Pictographic}(?:\u200d\p{Extended_Pictographic}|\ufe0f|\p{M})*"
    rf"|{_WORD_CHAR}+(?:(?:(?<={_LETTER})[.:'\u2019\u00b7\uff0e\uff07](?={_LETTER})"
    rf"|(?<=\p{{N}})[.,;'\u2019\uff0c\uff0e\uff07](?=\p{{N}})){_WORD_CHAR}+)*",
    regex.VERSION1,
)
_POSSESSIVE_QUOTES = frozenset("'\u2019\uff07")


@functools.cache
def load_stemmer() -> Any:
    """The Porter stemmer, loaded once (``open_index`` loads it so the first query does not wait).

    Imported on first use, not with this module: importing nltk pulls in scipy (about 0.6 s),
    which every process that imports the tools would pay (the miner, `arena --help`) though
    only indexing and querying stem.
    """
    from nltk.stem.porter import PorterStemmer

    return PorterStemmer(PorterStemmer.MARTIN_EXTENSIONS)


@functools.lru_cache(maxsize=1 << 20)
def _stem(token: str) -> str:
    return str(load_stemmer().stem(token, to_lowercase=False))


def tokenize(text: str) -> list[str]:
    """Split text into raw tokens the way Lucene's StandardTokenizer would (approximately).

    Args:
        text: any string.

    Returns:
        The tokens, in order, each at most 255 characters.
    """
    tokens: list[str] = []
    for token in _TOKEN.findall(text):
        if len(token) <= MAX_TOKEN_CHARS:
            tokens.append(token)
        else:
            tokens.extend(token[i : i + MAX_TOKEN_CHARS] for i in range(0, len(token), MAX_TOKEN_CHARS))
    return tokens


def analyze(text: str) -> list[str]:
    """Turn text into index terms: tokenise, strip possessive 's, lower-case, drop stop words, stem.

    Args:
        text: a document's search text or an agent's query.

    Returns:
        The terms in order (repeats kept: they are term frequencies).
    """
    terms: list[str] = []
    for token in tokenize(text):
        if len(token) >= 2 and token[-1] in "sS" and token[-2] in _POSSESSIVE_QUOTES:
            token = token[:-2]
            if not token:
                continue
        token = token.lower()
        if token in STOP_WORDS:
            continue
        terms.append(_stem(token))
    return terms


def query_terms(query: str) -> dict[str, int]:
    """Analyse a query into its distinct terms with their counts (a term's count is its boost).

    Only the first ``MAX_QUERY_TERMS`` distinct terms are kept, where Lucene would refuse the
    query outright; an empty or all-stop-word query has no terms and matches nothing.
    """
    counts = Counter(analyze(query))
    if len(counts) > MAX_QUERY_TERMS:
        kept = list(counts)[:MAX_QUERY_TERMS]
        return {term: counts[term] for term in kept}
    return dict(counts)
