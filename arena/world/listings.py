"""The side index over a world's new listings: their postings, scored with the base's BM25 statistics.

New listings are few (the delta), so their postings live in memory and are scored at query time
with exactly the arithmetic of ``arena.bm25`` and the base collection's statistics (document
count, average length, each term's document frequency), which a world leaves unchanged: base
scores stay exactly the base's, and a new listing's score is comparable with them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from arena import bm25
from arena.analysis import analyze, query_terms
from arena.index import SearchIndex
from arena.types import Product


class ListingIndex:
    """Postings of the new listings (ordinals ``first..first+n-1``), scored against the base's statistics."""

    def __init__(self, base: SearchIndex, products: Sequence[Product], first: int) -> None:
        stats = base.manifest["stats"]
        self._doc_count = int(stats["doc_count"])
        self._cache = bm25.norm_cache(stats["total_terms"] / max(self._doc_count, 1))
        self._first = first
        postings: dict[str, list[tuple[int, int]]] = {}
        norms = np.zeros(len(products), dtype=np.uint8)
        for position, product in enumerate(products):
            terms = analyze(product.search_text())
            norms[position] = bm25.length_to_norm(len(terms))
            for term, freq in Counter(terms).items():
                postings.setdefault(term, []).append((position, min(freq, np.iinfo(np.uint16).max)))
        self._norms = norms
        self._postings = {
            term: (
                np.array([p for p, _ in rows], dtype=np.uint32),
                np.array([f for _, f in rows], dtype=np.uint16),
            )
            for term, rows in postings.items()
        }
        self._base_df = base.doc_freqs(sorted(postings)) if postings else {}

    def match(self, query: str) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float32]]:
        """Matching listing ordinals and BM25 scores (clauses summed in float64, cast to float32)."""
        sums: dict[int, float] = {}
        for term, boost in query_terms(query).items():
            found = self._postings.get(term)
            if found is None:
                continue
            positions, freqs = found
            weight = np.float32(boost) * bm25.idf(self._base_df.get(term, 0), self._doc_count)
            scores = bm25.term_scores(weight, freqs, self._norms[positions], self._cache)
            for position, score in zip(positions.tolist(), scores.tolist(), strict=True):
                sums[position] = sums.get(position, 0.0) + score
        if not sums:
            return np.empty(0, np.uint32), np.empty(0, np.float32)
        matched = sorted(sums)
        ordinals = np.array(matched, dtype=np.uint32) + np.uint32(self._first)
        return ordinals, np.array([sums[p] for p in matched], dtype=np.float64).astype(np.float32)
