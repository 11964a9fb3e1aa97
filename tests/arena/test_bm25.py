import math

import numpy as np
import pytest

from arena import bm25


def test_short_lengths_are_stored_exactly() -> None:
    # Lucene's SmallFloat.intToByte4 keeps 0..23 as is and 24..39 exactly (four significant bits).
    for length in range(40):
        assert bm25.norm_to_length(bm25.length_to_norm(length)) == length


def test_longer_lengths_round_down_with_four_significant_bits() -> None:
    assert bm25.norm_to_length(bm25.length_to_norm(41)) == 40
    assert bm25.norm_to_length(bm25.length_to_norm(57)) == 56
    assert bm25.norm_to_length(bm25.length_to_norm(59)) == 56
    previous = -1
    for length in range(5000):
        decoded = bm25.norm_to_length(bm25.length_to_norm(length))
        assert decoded <= length and decoded >= previous
        assert length - decoded <= max(1, length // 8)
        previous = decoded


def test_every_norm_byte_round_trips() -> None:
    for norm in range(256):
        assert bm25.length_to_norm(bm25.norm_to_length(norm)) == norm
    assert bm25.length_to_norm(2**31 - 1) == 255


def test_vectorised_norms_match_the_scalar_encoding() -> None:
    lengths = np.array([0, 5, 23, 24, 100, 4095, 4096, 10**6], dtype=np.int64)
    assert bm25.lengths_to_norms(lengths).tolist() == [bm25.length_to_norm(int(n)) for n in lengths]


def test_idf_and_term_score_follow_the_bm25_formula() -> None:
    n, df, avgdl = 1000, 10, 7.5
    assert float(bm25.idf(df, n)) == pytest.approx(math.log(1 + (n - df + 0.5) / (df + 0.5)), rel=1e-7)
    cache = bm25.norm_cache(avgdl)
    weight = np.float32(2) * bm25.idf(df, n)
    freqs = np.array([1, 3], dtype=np.uint16)
    norms = np.array([bm25.length_to_norm(4), bm25.length_to_norm(12)], dtype=np.uint8)
    scores = bm25.term_scores(weight, freqs, norms, cache)
    for score, tf, length in zip(scores.tolist(), (1, 3), (4, 12), strict=True):
        expected = float(weight) * tf / (tf + 0.9 * (0.6 + 0.4 * length / avgdl))
        assert score == pytest.approx(expected, rel=1e-6)
    assert scores.dtype == np.float32


def test_rank_keys_round_to_1e4_then_order_by_product_id() -> None:
    scores = np.array([1.00001, 1.00004, 2.0, 1.00006], dtype=np.float32)
    id_ranks = np.array([3, 1, 0, 2], dtype=np.uint32)
    order = np.argsort(bm25.rank_keys(scores, id_ranks)).tolist()
    # 1.00001 and 1.00004 both round to 1.0000 (tie: lower id rank first); 1.00006 rounds up.
    assert order == [2, 3, 1, 0]


def test_top_order_batches_equal_a_full_sort() -> None:
    rng = np.random.default_rng(7)
    keys = rng.permutation(1000).astype(np.int64)
    full = np.argsort(keys).tolist()
    batches = [bm25.top_order(keys, a, b).tolist() for a, b in ((0, 10), (10, 90), (90, 1000), (1000, 1200))]
    assert sum(batches, []) == full


def test_top_candidates_cover_the_first_k_by_rank() -> None:
    rng = np.random.default_rng(3)
    scores = np.round(rng.random(5000) * 3, 4).astype(np.float32)  # many rounded ties
    id_ranks = rng.permutation(5000).astype(np.uint32)
    keys = bm25.rank_keys(scores, id_ranks)
    for k in (1, 10, 128, 1000):
        candidates = set(bm25.top_candidates(scores, k).tolist())
        assert set(np.argsort(keys)[:k].tolist()) <= candidates
        assert len(candidates) < 5000
