"""Lucene's BM25 arithmetic and Anserini's hit order, reproduced in numpy.

ShoppingBench searches a pyserini (Anserini over Lucene 9) index: ``BM25Similarity(k1=0.9,
b=0.4)`` over one ``contents`` field, a bag-of-words OR query whose clause boosts are term
counts, and Anserini's tie-breaker, which rounds scores to 1e-4 and orders equal rounded scores
by the collection docid (the product id) ascending. Everything here follows Lucene's float32
formulas step by step so that scores agree bit for bit with Lucene's:

- document lengths are stored as one byte (``SmallFloat.intToByte4``), exact up to 23 tokens
  and with four significant bits above, and decoded through the same 256-entry table;
- ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` with ``N`` the number of documents that have
  at least one term, ``avgdl = total terms / N``;
- per clause ``w = boost * idf`` and ``score = w - w / (1 + tf * cache[norm])`` with
  ``cache[i] = 1 / (k1 * ((1 - b) + b * length(i) / avgdl))``, all in float32;
- clause scores are summed in float64 and the sum is cast to float32, as BooleanScorer does.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

K1 = 0.9
B = 0.4
# How many hits a search scans at most (ShoppingBench's CAPACITY).
MAX_HITS = 100_000

_NUM_FREE_VALUES = 24  # 255 - longToInt4(Integer.MAX_VALUE)

FloatArray = npt.NDArray[np.float32]
UIntArray = npt.NDArray[np.uint32]


def _long_to_int4(value: int) -> int:
    bits = value.bit_length()
    if bits < 4:
        return value
    shift = bits - 4
    return ((value >> shift) & 0x07) | ((shift + 1) << 3)


def _int4_to_long(code: int) -> int:
    bits = code & 0x07
    shift = (code >> 3) - 1
    return bits if shift == -1 else (bits | 0x08) << shift


def length_to_norm(length: int) -> int:
    """Encode a document length (token count) into Lucene's one-byte norm."""
    if length < _NUM_FREE_VALUES:
        return length
    return min(255, _NUM_FREE_VALUES + _long_to_int4(length - _NUM_FREE_VALUES))


def norm_to_length(norm: int) -> int:
    """Decode a one-byte norm back to the (rounded-down) document length Lucene scores with."""
    if norm < _NUM_FREE_VALUES:
        return norm
    return _NUM_FREE_VALUES + _int4_to_long(norm - _NUM_FREE_VALUES)


LENGTH_TABLE = np.array([norm_to_length(i) for i in range(256)], dtype=np.float32)
_NORM_TABLE_SIZE = 4096
_SMALL_NORMS = np.array([length_to_norm(i) for i in range(_NORM_TABLE_SIZE)], dtype=np.uint8)


def lengths_to_norms(lengths: npt.NDArray[np.int64]) -> npt.NDArray[np.uint8]:
    """Encode many document lengths at once (a table for common lengths, exact code for the rest)."""
    norms = _SMALL_NORMS[np.minimum(lengths, _NORM_TABLE_SIZE - 1)]
    for i in np.flatnonzero(lengths >= _NORM_TABLE_SIZE):
        norms[i] = length_to_norm(int(lengths[i]))
    return norms


def idfs(doc_freqs: npt.NDArray[np.int64], doc_count: int) -> FloatArray:
    """Lucene's BM25 idf of many terms, computed in double and stored as float."""
    freqs = np.asarray(doc_freqs, dtype=np.float64)
    return np.log(1 + (doc_count - freqs + 0.5) / (freqs + 0.5)).astype(np.float32)


def idf(doc_freq: int, doc_count: int) -> np.float32:
    """Lucene's BM25 idf of one term (the same arithmetic as ``idfs``)."""
    return np.float32(idfs(np.array([doc_freq], dtype=np.int64), doc_count)[0])


def norm_cache(avgdl: float, k1: float = K1, b: float = B) -> FloatArray:
    """The per-norm inverse length factors of one searcher (float32, Lucene's operation order).

    An empty collection (``avgdl`` 0) has no postings to score; it gets a harmless table.
    """
    avgdl = avgdl if avgdl > 0 else 1.0
    k1_32, b_32, avgdl_32 = np.float32(k1), np.float32(b), np.float32(avgdl)
    one = np.float32(1.0)
    return (one / (k1_32 * ((one - b_32) + b_32 * LENGTH_TABLE / avgdl_32))).astype(np.float32)


def term_scores(
    weight: np.float32 | FloatArray,
    freqs: npt.NDArray[np.uint16],
    norms: npt.NDArray[np.uint8],
    cache: FloatArray,
) -> FloatArray:
    """Score postings: ``w - w / (1 + tf * cache[norm])`` in float32 (``w`` per clause or per posting)."""
    inverse = np.take(cache, norms)
    one = np.float32(1.0)
    return (weight - weight / (one + freqs.astype(np.float32) * inverse)).astype(np.float32)


def rank_keys(scores: FloatArray, id_ranks: UIntArray) -> npt.NDArray[np.int64]:
    """Sort keys for Anserini's order: rounded score descending, then product id ascending.

    Anserini rounds ``Math.round(score * 1e4f) / 1e4f``; equal rounded floats are exactly equal
    rounded integers, so the integer (shifted past the 32-bit id rank) orders the same way.
    """
    scaled = (scores * np.float32(1e4)).astype(np.float64)
    rounded = np.floor(scaled + 0.5).astype(np.int64)
    return -(rounded << 32) + id_ranks.astype(np.int64)


# Scores this far below the k-th best cannot round to its value (float32 error is far smaller).
ROUNDING_MARGIN = np.float32(2e-4)


def top_candidates(scores: FloatArray, k: int) -> npt.NDArray[np.intp]:
    """Positions of every hit that can be among the first ``k`` in rank order (a small superset).

    A hit scoring more than a rounding step below the k-th best raw score rounds strictly
    lower than the k hits above it, so it cannot reach the first ``k`` whatever its id.
    """
    kth = np.partition(scores, len(scores) - k)[len(scores) - k]
    return np.flatnonzero(scores >= kth - ROUNDING_MARGIN)


def top_order(keys: npt.NDArray[np.int64], start: int, stop: int) -> npt.NDArray[np.intp]:
    """Positions of the hits ranked ``start..stop-1`` by ``keys`` (ascending), in rank order."""
    stop = min(stop, len(keys))
    if start >= stop:
        return np.empty(0, dtype=np.intp)
    if stop < len(keys):
        candidates = np.argpartition(keys, stop - 1)[:stop]
    else:
        candidates = np.arange(len(keys))
    ordered = candidates[np.argsort(keys[candidates], kind="stable")]
    return ordered[start:stop]
