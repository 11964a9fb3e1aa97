"""Writing the inverted file: term postings (document ordinal, term frequency) laid out by term on disk.

Documents arrive one at a time in ordinal order. Postings are buffered in compact arrays and
spilled to chunk files, so memory stays bounded by the chunk size and the vocabulary, never by
the catalog. ``finish`` lays every term's postings out contiguously (ascending ordinals) in two
``.npy`` files with a counting sort: term offsets come from the document frequencies, and each
chunk is scattered into place through a memory map.
"""

from __future__ import annotations

import logging
from array import array
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from arena import bm25

logger = logging.getLogger(__name__)

DOCS_FILE = "postings_docs.npy"
FREQS_FILE = "postings_freqs.npy"
IMPACTS_FILE = "postings_impacts.npy"
_MAX_FREQ = np.iinfo(np.uint16).max


@dataclass(frozen=True)
class PostingsStats:
    """What ``finish`` wrote: term offsets and frequencies, and collection statistics."""

    starts: npt.NDArray[np.int64]
    doc_freqs: npt.NDArray[np.int64]
    postings: int
    doc_count: int  # documents with at least one term (Lucene's docCount)
    total_terms: int  # sum of document lengths (Lucene's sumTotalTermFreq)


class PostingsWriter:
    """Accumulates postings document by document and writes them term-major on ``finish``."""

    def __init__(self, directory: Path, *, chunk_postings: int = 4_000_000) -> None:
        self.directory = directory
        self.vocabulary: dict[str, int] = {}
        self._chunk_postings = chunk_postings
        self._doc_freqs: list[int] = []
        self._chunks: list[Path] = []
        self._terms = array("I")
        self._docs = array("I")
        self._freqs = array("H")
        self._postings = 0
        self._doc_count = 0
        self._total_terms = 0

    def add(self, ordinal: int, terms: list[str]) -> None:
        """Record one document's analysed terms (ordinals must arrive in increasing order)."""
        if not terms:
            return
        self._doc_count += 1
        self._total_terms += len(terms)
        vocabulary, doc_freqs = self.vocabulary, self._doc_freqs
        for term, freq in Counter(terms).items():
            term_id = vocabulary.get(term)
            if term_id is None:
                term_id = vocabulary[term] = len(doc_freqs)
                doc_freqs.append(0)
            doc_freqs[term_id] += 1
            self._terms.append(term_id)
            self._docs.append(ordinal)
            self._freqs.append(min(freq, _MAX_FREQ))
        if len(self._terms) >= self._chunk_postings:
            self._spill()

    def _spill(self) -> None:
        path = self.directory / f"chunk-{len(self._chunks):05d}.npz"
        np.savez(
            path,
            terms=np.frombuffer(self._terms, dtype=np.uint32),
            docs=np.frombuffer(self._docs, dtype=np.uint32),
            freqs=np.frombuffer(self._freqs, dtype=np.uint16),
        )
        self._postings += len(self._terms)
        self._chunks.append(path)
        self._terms, self._docs, self._freqs = array("I"), array("I"), array("H")

    def finish(self) -> PostingsStats:
        """Write ``postings_docs.npy`` and ``postings_freqs.npy`` term-major and drop the chunks."""
        if len(self._terms):
            self._spill()
        doc_freqs = np.asarray(self._doc_freqs, dtype=np.int64)
        starts = np.zeros(len(doc_freqs), dtype=np.int64)
        if len(doc_freqs):
            np.cumsum(doc_freqs[:-1], out=starts[1:])
        total = self._postings
        docs_out = np.lib.format.open_memmap(
            self.directory / DOCS_FILE, mode="w+", dtype=np.uint32, shape=(total,)
        )
        freqs_out = np.lib.format.open_memmap(
            self.directory / FREQS_FILE, mode="w+", dtype=np.uint16, shape=(total,)
        )
        cursor = starts.copy()
        for path in self._chunks:
            with np.load(path) as chunk:
                terms, docs, freqs = chunk["terms"], chunk["docs"], chunk["freqs"]
            # A stable sort keeps each term's ordinals ascending, as they arrived.
            order = np.argsort(terms, kind="stable")
            sorted_terms = terms[order]
            unique, first, counts = np.unique(sorted_terms, return_index=True, return_counts=True)
            rank_in_term = np.arange(len(order)) - np.repeat(first, counts)
            positions = cursor[sorted_terms] + rank_in_term
            docs_out[positions] = docs[order]
            freqs_out[positions] = freqs[order]
            cursor[unique] += counts
            path.unlink()
        docs_out.flush()
        freqs_out.flush()
        del docs_out, freqs_out
        logger.info("postings_written terms=%d postings=%d", len(doc_freqs), total)
        return PostingsStats(starts, doc_freqs, total, self._doc_count, self._total_terms)


def write_impacts(
    directory: Path, stats: PostingsStats, norms: npt.NDArray[np.uint8], *, block: int = 4_000_000
) -> None:
    """Write ``postings_impacts.npy``: every posting's BM25 score for a clause of boost 1.

    The collection statistics are final once the postings are, so the common query clause
    (a term that occurs once in the query) costs a slice instead of a computation.
    """
    cache = bm25.norm_cache(stats.total_terms / max(stats.doc_count, 1))
    idfs = bm25.idfs(stats.doc_freqs, stats.doc_count)
    docs = np.load(directory / DOCS_FILE, mmap_mode="r")
    freqs = np.load(directory / FREQS_FILE, mmap_mode="r")
    out = np.lib.format.open_memmap(
        directory / IMPACTS_FILE, mode="w+", dtype=np.float32, shape=(stats.postings,)
    )
    for first in range(0, stats.postings, block):
        last = min(stats.postings, first + block)
        term_of = np.searchsorted(stats.starts, np.arange(first, last), side="right") - 1
        out[first:last] = bm25.term_scores(idfs[term_of], freqs[first:last], norms[docs[first:last]], cache)
    out.flush()
    del out
