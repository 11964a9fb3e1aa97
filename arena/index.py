"""The search index: build it from a catalog, open it, search it with ShoppingBench's BM25, look products up.

An index is a directory:

- ``manifest.json``: format, engine, catalog version, counts, analyzer and BM25 parameters,
  collection statistics, and the size of every file (written last: no manifest, no index);
- ``store.sqlite``: product summaries by ordinal (id, shop, title, services), the canonical
  product JSON by ordinal, the term dictionary (term, first posting, document frequency), shops;
- ``postings_docs.npy`` / ``postings_freqs.npy`` / ``postings_impacts.npy``: each term's
  postings (ordinals ascending, term frequencies, BM25 scores at boost 1), contiguous;
- per-product arrays (``norms``, ``id_ranks``, ``prices``, ``sold_counts``, ``services``,
  ``shops``): the fast fields that scoring, ordering and filtering read without touching JSON.

Thread safety: a ``SearchIndex`` is read-only. The numpy arrays (memory-mapped postings,
in-memory fast fields) are shared by every thread; the one SQLite connection, opened read-only
at ``open_index`` so that every thread sees the same files, is used under a lock (SQLite calls
release the GIL and take microseconds). Any number of threads may search one index at once.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from arena import bm25
from arena.analysis import load_stemmer, query_terms
from arena.errors import SearchIndexError
from arena.index_types import FastFields, FieldName, Hit, ProductIndex
from arena.indexer import (
    ENGINE,
    FIELD_ARRAYS,
    FORMAT,
    MANIFEST,
    POSTING_ARRAYS,
    STORE,
    BuildReport,
    build,
    index_params,
    service_mask,
)
from arena.types import SERVICES, Product, Service

logger = logging.getLogger(__name__)

# The first relevance batch; each further batch is eight times larger (most scans stop early).
FIRST_BATCH = 128
_SQL_CHUNK = 500
_DOC_SQL = "SELECT doc FROM products JOIN documents USING (ordinal) WHERE product_id"

__all__ = [
    "BuildReport",
    "FastFields",
    "FieldName",
    "Hit",
    "ProductIndex",
    "SearchIndex",
    "build_index",
    "open_index",
    "service_mask",
]


def build_index(
    catalog_paths: Sequence[Path], index_dir: Path, *, progress: Callable[[int], None] | None = None
) -> BuildReport:
    """Build a search index from catalog files, streaming (see ``arena.indexer``).

    Args:
        catalog_paths: ``.jsonl``/``.jsonl.gz`` catalogs (ShoppingBench documents or plain products).
        index_dir: where the index goes; an existing index there is replaced, any other
            non-empty directory is refused.
        progress: called now and then with the number of rows read so far.

    Raises:
        CatalogError: a catalog file is missing or unreadable.
        SearchIndexError: ``index_dir`` is a non-empty directory that is not an index.
    """
    return build(catalog_paths, index_dir, progress=progress)


def _read_manifest(index_dir: Path) -> dict[str, Any]:
    path = index_dir / MANIFEST
    if not path.is_file():
        raise SearchIndexError(f"no search index at {index_dir} (missing {MANIFEST})")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SearchIndexError(f"corrupt index manifest {path}: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise SearchIndexError(f"{path} is not an {FORMAT} manifest")
    if manifest.get("engine") != ENGINE or manifest.get("params") != index_params():
        raise SearchIndexError(f"index {index_dir} was built with other engine parameters; rebuild it")
    files = manifest.get("files")
    if not isinstance(files, dict):
        raise SearchIndexError(f"corrupt index manifest {path}: no file list")
    for name, size in files.items():
        file = index_dir / name
        if not file.is_file() or file.stat().st_size != size:
            raise SearchIndexError(f"index file {file} is missing or has the wrong size")
    return manifest


def open_index(index_dir: Path, *, catalog_version: str | None = None, warm: bool = True) -> SearchIndex:
    """Open a built index read-only, checking its manifest, files and (optionally) catalog version.

    ``warm`` loads the query stemmer now, so the first search does not wait for it; a caller that
    only looks products up (``arena judge`` with a tool log) passes False and never loads nltk.

    Raises:
        SearchIndexError: the index is missing, corrupt, built with other parameters, or of
            another catalog version than ``catalog_version``.
    """
    index_dir = Path(index_dir)
    manifest = _read_manifest(index_dir)
    if catalog_version is not None and manifest["catalog_version"] != catalog_version:
        raise SearchIndexError(
            f"index {index_dir} is of catalog {manifest['catalog_version']}, expected {catalog_version}"
        )
    db = sqlite3.connect(f"file:{index_dir / STORE}?mode=ro&immutable=1", uri=True, check_same_thread=False)
    try:
        arrays = {name: np.load(index_dir / f"{name}.npy", mmap_mode="r") for name in POSTING_ARRAYS}
        arrays |= {name: np.load(index_dir / f"{name}.npy") for name in FIELD_ARRAYS}
        db.execute("PRAGMA cache_size = -65536")  # 64 MiB of pages: hot summary rows stay cached
        last = db.execute("SELECT max(ordinal) FROM products").fetchone()[0]
        count, postings = int(manifest["products"]), int(manifest["stats"]["postings"])
        if (last if last is not None else -1) != count - 1 or any(
            len(arrays[n]) != count for n in FIELD_ARRAYS
        ):
            raise ValueError("product counts disagree")
        if any(len(arrays[name]) != postings for name in POSTING_ARRAYS):
            raise ValueError("posting counts disagree")
        index = SearchIndex(index_dir, manifest, arrays, db)
    except (OSError, ValueError, KeyError, TypeError, sqlite3.Error) as exc:
        db.close()
        raise SearchIndexError(f"corrupt search index {index_dir}: {exc}") from exc
    if warm:
        load_stemmer()  # queries stem: pay the import at start-up, not in the first tool call
    return index


def _services(joined: str) -> tuple[Service, ...]:
    return tuple(name for name in SERVICES if name in joined.split(",")) if joined else ()


class SearchIndex:
    """A read-only, thread-safe search index over one catalog version (see ``open_index``)."""

    def __init__(
        self, path: Path, manifest: dict[str, Any], arrays: dict[str, Any], db: sqlite3.Connection
    ) -> None:
        self.path = path
        self.catalog_version: str = manifest["catalog_version"]
        self.manifest = manifest
        self._count: int = manifest["products"]
        self._doc_count: int = manifest["stats"]["doc_count"]
        avgdl = manifest["stats"]["total_terms"] / max(self._doc_count, 1)
        self._cache = bm25.norm_cache(avgdl)
        self._docs: npt.NDArray[np.uint32] = arrays["postings_docs"]
        self._freqs: npt.NDArray[np.uint16] = arrays["postings_freqs"]
        self._impacts: npt.NDArray[np.float32] = arrays["postings_impacts"]
        self._norms: npt.NDArray[np.uint8] = arrays["norms"]
        self._id_ranks: npt.NDArray[np.uint32] = arrays["id_ranks"]
        self.fields = FastFields(arrays["prices"], arrays["sold_counts"], arrays["services"], arrays["shops"])
        self._db: sqlite3.Connection | None = db
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._count

    def __enter__(self) -> SearchIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the store connection; the index is unusable afterwards."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            if self._db is None:
                raise SearchIndexError(f"search index {self.path} is closed")
            return self._db.execute(sql, params).fetchall()

    # ----------------------------------------------------------------------- lookups

    def product(self, product_id: str) -> Product | None:
        """The product with this id, or None."""
        rows = self._query(f"{_DOC_SQL} = ?", (product_id,))
        return Product.model_validate_json(rows[0][0]) if rows else None

    def products(self, product_ids: Sequence[str]) -> dict[str, Product]:
        """The known products among ``product_ids`` by id (unknown ids are absent)."""
        found: dict[str, Product] = {}
        wanted = list(dict.fromkeys(product_ids))
        for i in range(0, len(wanted), _SQL_CHUNK):
            chunk = wanted[i : i + _SQL_CHUNK]
            for doc in self._query(f"{_DOC_SQL} IN ({','.join('?' * len(chunk))})", chunk):
                product = Product.model_validate_json(doc[0])
                found[product.product_id] = product
        return found

    def stock_levels(self, product_ids: Sequence[str]) -> dict[str, int]:
        """A catalog declares no stock levels (every product is available); a world may."""
        del product_ids
        return {}

    def product_id_at(self, ordinal: int) -> str:
        """The id of the product at ``ordinal`` (0..len-1, stable: the catalog order).

        Raises:
            IndexError: ``ordinal`` is out of range.
        """
        rows = self._query("SELECT product_id FROM products WHERE ordinal = ?", (int(ordinal),))
        if not rows:
            raise IndexError(f"product ordinal {ordinal} out of range 0..{self._count - 1}")
        return str(rows[0][0])

    def ordinals_of(self, product_ids: Sequence[str]) -> dict[str, int]:
        """The ordinals of the known ids among ``product_ids`` (for overlays that patch fast fields)."""
        found: dict[str, int] = {}
        wanted = list(dict.fromkeys(product_ids))
        for i in range(0, len(wanted), _SQL_CHUNK):
            chunk = wanted[i : i + _SQL_CHUNK]
            sql = (
                f"SELECT product_id, ordinal FROM products WHERE product_id IN ({','.join('?' * len(chunk))})"
            )
            found.update((str(pid), int(ordinal)) for pid, ordinal in self._query(sql, chunk))
        return found

    def id_ranks_at(self, ordinals: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
        """The rank of each product id at ``ordinals`` among all ids in ascending order."""
        return self._id_ranks[ordinals]

    def id_rank_before(self, product_id: str) -> int:
        """The rank of the largest id below ``product_id`` (-1 if none): where a new id would sort."""
        rows = self._query(
            "SELECT ordinal FROM products WHERE product_id < ? ORDER BY product_id DESC LIMIT 1",
            (product_id,),
        )
        return int(self._id_ranks[int(rows[0][0])]) if rows else -1

    def doc_freqs(self, terms: Sequence[str]) -> dict[str, int]:
        """The document frequency of each analysed term that occurs in the index."""
        found: dict[str, int] = {}
        names = list(dict.fromkeys(terms))
        for i in range(0, len(names), _SQL_CHUNK):
            chunk = names[i : i + _SQL_CHUNK]
            sql = f"SELECT term, df FROM terms WHERE term IN ({','.join('?' * len(chunk))})"
            found.update((str(term), int(df)) for term, df in self._query(sql, chunk))
        return found

    def shop_product_ids(self, shop_id: str) -> list[str]:
        """Ids of a shop's products in catalog order (empty for an unknown shop)."""
        rows = self._query("SELECT product_id FROM products WHERE shop_id = ? ORDER BY ordinal", (shop_id,))
        return [row[0] for row in rows]

    def shops_with_at_least(self, n: int) -> list[str]:
        """Sorted ids of the shops that have at least ``n`` products."""
        return [
            row[0]
            for row in self._query("SELECT shop_id FROM shops WHERE products >= ? ORDER BY shop_id", (n,))
        ]

    def shop_code(self, shop_id: str) -> int | None:
        """The code of a shop in ``fields.shops``, or None for an unknown shop."""
        rows = self._query("SELECT code FROM shops WHERE shop_id = ?", (shop_id,))
        return int(rows[0][0]) if rows else None

    # ----------------------------------------------------------------------- search

    def _postings(self, query: str) -> list[tuple[npt.NDArray[np.uint32], npt.NDArray[np.float32]]]:
        """Each matching clause's postings and their scores, in query order (as Lucene adds clauses)."""
        terms = query_terms(query)
        if not terms or not self._doc_count:
            return []
        found: dict[str, tuple[int, int]] = {}
        names = list(terms)
        for i in range(0, len(names), _SQL_CHUNK):
            chunk = names[i : i + _SQL_CHUNK]
            sql = f"SELECT term, start, df FROM terms WHERE term IN ({','.join('?' * len(chunk))})"
            found.update((term, (start, df)) for term, start, df in self._query(sql, chunk))
        parts = []
        for term, boost in terms.items():
            if term not in found:
                continue
            start, df = found[term]
            stop = start + df
            docs = self._docs[start:stop]
            if boost == 1:  # the scores precomputed at build time are exact for boost 1
                parts.append((docs, self._impacts[start:stop]))
                continue
            weight = np.float32(boost) * bm25.idf(df, self._doc_count)
            parts.append(
                (docs, bm25.term_scores(weight, self._freqs[start:stop], self._norms[docs], self._cache))
            )
        return parts

    def match(self, query: str) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float32]]:
        """Every matching ordinal with its BM25 score (the sum over the query's matching terms), unordered."""
        parts = self._postings(query)
        if not parts:
            return np.empty(0, np.uint32), np.empty(0, np.float32)
        if len(parts) == 1:
            return np.asarray(parts[0][0]), np.asarray(parts[0][1])
        docs = np.concatenate([p[0] for p in parts])
        scores = np.concatenate([p[1] for p in parts]).astype(np.float64)  # Lucene sums in double
        if len(docs) * 8 > self._count:
            sums = np.bincount(docs, weights=scores, minlength=self._count)
            matched = np.flatnonzero(sums > 0)  # nonzero() on floats is ten times slower than on bools
            return matched.astype(np.uint32), sums[matched].astype(np.float32)
        order = np.argsort(docs, kind="stable")
        docs, scores = docs[order], scores[order]
        starts = np.flatnonzero(np.r_[True, docs[1:] != docs[:-1]])
        return docs[starts], np.add.reduceat(scores, starts).astype(np.float32)

    def field_values(self, name: FieldName, ordinals: npt.NDArray[np.uint32]) -> npt.NDArray[Any]:
        """One fast field's values at ``ordinals`` (a gather from the in-memory array)."""
        values: npt.NDArray[Any] = getattr(self.fields, name)[ordinals]
        return values

    def rank_keys(
        self, ordinals: npt.NDArray[np.uint32], scores: npt.NDArray[np.float32]
    ) -> npt.NDArray[np.int64]:
        """Sort keys (ascending = better) of matches: rounded score descending, then product id."""
        return bm25.rank_keys(scores, self._id_ranks[ordinals])

    def ranked(self, query: str) -> Iterator[tuple[npt.NDArray[np.uint32], npt.NDArray[np.float32]]]:
        """Relevance-ordered (ordinals, scores) in growing batches, at most ``MAX_HITS`` in all.

        The order is Anserini's: BM25 score rounded to 1e-4 descending, then product id
        ascending. Nothing is fetched from the store: callers filter on ``fields``.
        """
        ordinals, scores = self.match(query)
        limit = min(len(scores), bm25.MAX_HITS)
        start = 0
        if limit > FIRST_BATCH and len(scores) > 4 * FIRST_BATCH:
            # Most scans end in the first batch: order only the hits that can reach it.
            candidates = bm25.top_candidates(scores, FIRST_BATCH)
            keys = self.rank_keys(ordinals[candidates], scores[candidates])
            first = candidates[np.argsort(keys)[:FIRST_BATCH]]
            yield ordinals[first], scores[first]
            start = FIRST_BATCH
        if start >= limit:
            return
        keys = self.rank_keys(ordinals, scores)
        size = FIRST_BATCH * (8 if start else 1)
        while start < limit:
            stop = min(limit, start + size)
            positions = bm25.top_order(keys, start, stop)
            yield ordinals[positions], scores[positions]
            start, size = stop, size * 8

    def hits_at(self, ordinals: npt.NDArray[np.uint32], scores: npt.NDArray[np.float32]) -> list[Hit]:
        """Materialise hits for ordinals (summary fields from the store and the fast fields)."""
        rows: dict[int, tuple[str, str, str, str]] = {}
        wanted = [int(o) for o in ordinals]
        for i in range(0, len(wanted), _SQL_CHUNK):
            chunk = wanted[i : i + _SQL_CHUNK]
            marks = ",".join("?" * len(chunk))
            sql = "SELECT ordinal, product_id, shop_id, title, service FROM products WHERE ordinal IN "
            for ordinal, *row in self._query(f"{sql}({marks})", chunk):
                rows[ordinal] = (row[0], row[1], row[2], row[3])
        # One gather per fast field, and each distinct service list read once (there are few).
        prices, sold = self.fields.prices[ordinals].tolist(), self.fields.sold_counts[ordinals].tolist()
        services = {joined: _services(joined) for joined in {row[3] for row in rows.values()}}
        return [
            Hit(
                product_id=rows[o][0],
                shop_id=rows[o][1],
                title=rows[o][2],
                price=float(price),
                service=services[rows[o][3]],
                sold_count=int(count),
                score=float(s),
            )
            for o, price, count, s in zip(wanted, prices, sold, scores.tolist(), strict=True)
        ]

    def hits(self, query: str) -> Iterator[Hit]:
        """Relevance-ordered BM25 hits with ShoppingBench's OR semantics (at most ``MAX_HITS``).

        Any string is a valid query: it is analysed like a document, never parsed, so an empty
        or punctuation-only query simply has no hits.
        """
        for ordinals, scores in self.ranked(query):
            yield from self.hits_at(ordinals, scores)
