"""Title matchers for the outcome check: a deterministic lexical default and an optional embedding one.

ShoppingBench compares a recommended product's title with the gold title by the cosine of
Qwen3-Embedding-0.6B sentence embeddings (hit at >= 0.5; >= 0.8 for knowledge tasks). We
default to a lexical measure that needs no model and gives the same number on every machine;
an embedding matcher can be plugged in behind the same protocol. The two scales differ, so
each comes with its own thresholds (see ``docs/judging.md``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Protocol

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


class TitleMatcher(Protocol):
    """Scores how similar a product title is to a reference title, in [0, 1]."""

    @property
    def name(self) -> str:
        """A stable name for the matcher (recorded in the scorer version)."""
        ...

    def similarity(self, candidate: str, reference: str) -> float:
        """Return the similarity of ``candidate`` to ``reference`` in [0, 1]."""
        ...


def title_tokens(text: str) -> frozenset[str]:
    """Return the set of lower-cased word tokens (letters and digits; punctuation splits words)."""
    return frozenset(_TOKEN.findall(text.lower()))


def lexical_similarity(candidate: str, reference: str) -> float:
    """Return the Ochiai coefficient of the two titles' token sets.

    ``|A & B| / sqrt(|A| * |B|)``: the cosine of the binary bag-of-words vectors. It is 1 for
    the same words in any order, 0 for no shared word, and symmetric; a long title containing
    every word of a short reference scores ``sqrt(len(short) / len(long))``.
    """
    a, b = title_tokens(candidate), title_tokens(reference)
    if not a or not b:
        return 0.0
    return len(a & b) / math.sqrt(len(a) * len(b))


class LexicalTitleMatcher:
    """The default matcher: token-set cosine (Ochiai), deterministic and model-free."""

    @property
    def name(self) -> str:
        """Return the matcher's versioned name."""
        return "lexical-ochiai/1"

    def similarity(self, candidate: str, reference: str) -> float:
        """Return :func:`lexical_similarity` of the two titles."""
        return lexical_similarity(candidate, reference)


Embed = Callable[[Sequence[str]], Sequence[Sequence[float]]]


class EmbeddingTitleMatcher:
    """Cosine similarity of sentence embeddings from any ``embed`` function (e.g. Qwen3-Embedding-0.6B).

    Holds a cache of embeddings by text, since the same gold titles recur across trajectories.
    Negative cosines are clipped to 0 so the value stays in [0, 1].
    """

    def __init__(self, embed: Embed, model: str) -> None:
        self._embed = embed
        self._model = model
        self._cache: dict[str, tuple[float, ...]] = {}

    @property
    def name(self) -> str:
        """Return the matcher's name including the pinned embedding model."""
        return f"embedding:{self._model}"

    def _vectors(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            for text, vector in zip(missing, self._embed(missing), strict=True):
                self._cache[text] = tuple(float(x) for x in vector)
        return [self._cache[t] for t in texts]

    def similarity(self, candidate: str, reference: str) -> float:
        """Return the clipped cosine of the two titles' embeddings."""
        u, v = self._vectors([candidate, reference])
        norm = math.sqrt(sum(x * x for x in u)) * math.sqrt(sum(y * y for y in v))
        if norm == 0 or not math.isfinite(norm):
            return 0.0
        cosine = sum(x * y for x, y in zip(u, v, strict=True)) / norm
        return min(1.0, max(0.0, cosine)) if math.isfinite(cosine) else 0.0


LEXICAL = LexicalTitleMatcher()
