"""Building the search index from catalog files: the on-disk format and the streaming build.

The build reads the catalog once, product by product (never all of it in memory): each new
product id gets the next ordinal and a row in the SQLite store (a duplicate id is a bad row:
the first product is kept), its search text is analysed into postings (spilled to disk in
chunks), and its fast fields are appended to compact arrays. The store commits in batches.
Everything is written into a sibling work directory that replaces ``index_dir`` only once
complete, with ``manifest.json`` written last, so a crashed build never leaves a half index.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
import time
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from arena import bm25
from arena.analysis import ANALYZER, analyze
from arena.catalog import BadRow, CatalogHasher, LoadReport, iter_products, product_line
from arena.errors import SearchIndexError
from arena.postings import PostingsWriter, write_impacts
from arena.types import SERVICES

logger = logging.getLogger(__name__)

FORMAT = "arena.index/1"
ENGINE = "lucene-bm25-numpy"
MANIFEST = "manifest.json"
STORE = "store.sqlite"
FIELD_ARRAYS = ("norms", "id_ranks", "prices", "sold_counts", "services", "shops")
POSTING_ARRAYS = ("postings_docs", "postings_freqs", "postings_impacts")
COMMIT_EVERY = 50_000
# Postings buffered in memory before they spill to a chunk file (about 10 bytes each).
CHUNK_POSTINGS = 4_000_000
PROGRESS_EVERY = 1_000

_SCHEMA = """
CREATE TABLE products (
  ordinal INTEGER PRIMARY KEY,
  product_id TEXT NOT NULL UNIQUE,
  shop_id TEXT NOT NULL,
  title TEXT NOT NULL,
  service TEXT NOT NULL
);
CREATE TABLE documents (ordinal INTEGER PRIMARY KEY, doc TEXT NOT NULL);
CREATE TABLE terms (term TEXT PRIMARY KEY, start INTEGER NOT NULL, df INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE shops (code INTEGER PRIMARY KEY, shop_id TEXT NOT NULL UNIQUE, products INTEGER NOT NULL);
"""
_INSERT = (
    "INSERT INTO products (ordinal, product_id, shop_id, title, service) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (product_id) DO NOTHING"
)


def index_params() -> dict[str, Any]:
    """The parameters an index is built with; an index with other parameters is refused."""
    return {
        "analyzer": ANALYZER,
        "k1": bm25.K1,
        "b": bm25.B,
        "max_hits": bm25.MAX_HITS,
        "order": "score rounded to 1e-4 desc, then product_id asc",
    }


def service_mask(services: Sequence[str]) -> int:
    """Bit mask of a set of services (unknown names are ignored, as ShoppingBench does)."""
    return sum(1 << i for i, name in enumerate(SERVICES) if name in services)


@dataclass(frozen=True)
class BuildReport:
    """Outcome of ``build_index``: products indexed, bad rows (duplicates included), time, size."""

    products: int
    bad_rows: int
    seconds: float
    bytes_on_disk: int
    catalog_version: str
    rows: int = 0
    duplicates: int = 0
    terms: int = 0
    postings: int = 0
    bad_row_samples: tuple[str, ...] = ()


class _FieldColumns:
    """The per-product fast fields, accumulated as compact arrays in ordinal order."""

    def __init__(self) -> None:
        self.lengths = array("q")
        self.prices = array("d")
        self.sold_counts = array("q")
        self.services = array("B")
        self.shops = array("i")
        self.shop_codes: dict[str, int] = {}
        self.shop_sizes: list[int] = []

    def add(self, length: int, price: float, sold: int, services: Sequence[str], shop_id: str) -> None:
        code = self.shop_codes.get(shop_id)
        if code is None:
            code = self.shop_codes[shop_id] = len(self.shop_sizes)
            self.shop_sizes.append(0)
        self.shop_sizes[code] += 1
        self.lengths.append(length)
        self.prices.append(price)
        self.sold_counts.append(sold)
        self.services.append(service_mask(services))
        self.shops.append(code)

    def save(self, work: Path, id_ranks: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        lengths = np.frombuffer(self.lengths, dtype=np.int64) if len(self.lengths) else np.empty(0, np.int64)
        columns: dict[str, np.ndarray[Any, Any]] = {
            "norms": bm25.lengths_to_norms(lengths),
            "id_ranks": id_ranks,
            "prices": np.array(self.prices, dtype=np.float64),
            "sold_counts": np.array(self.sold_counts, dtype=np.int64),
            "services": np.array(self.services, dtype=np.uint8),
            "shops": np.array(self.shops, dtype=np.int32),
        }
        for name, values in columns.items():
            np.save(work / f"{name}.npy", values)
        return columns["norms"]


def _check_target(index_dir: Path) -> None:
    if not index_dir.exists():
        return
    if not index_dir.is_dir():
        raise SearchIndexError(f"{index_dir} exists and is not a directory")
    if any(index_dir.iterdir()) and not (index_dir / MANIFEST).is_file():
        raise SearchIndexError(
            f"refusing to replace {index_dir}: a non-empty directory that is not a search index"
        )


def build(
    catalog_paths: Sequence[Path], index_dir: Path, *, progress: Callable[[int], None] | None = None
) -> BuildReport:
    """Build an index (see ``arena.index.build_index``, which documents the arguments)."""
    started = time.perf_counter()
    index_dir = Path(index_dir)
    _check_target(index_dir)
    index_dir.parent.mkdir(parents=True, exist_ok=True)
    work = index_dir.parent / f".{index_dir.name}.building-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        report = _build_into([Path(p) for p in catalog_paths], work, progress, started)
        if index_dir.exists():
            shutil.rmtree(index_dir)
        os.replace(work, index_dir)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    logger.info(
        "index_built path=%s products=%d bad_rows=%d seconds=%.1f bytes=%d catalog=%s",
        index_dir,
        report.products,
        report.bad_rows,
        report.seconds,
        report.bytes_on_disk,
        report.catalog_version,
    )
    return report


def _build_into(
    paths: list[Path], work: Path, progress: Callable[[int], None] | None, started: float
) -> BuildReport:
    db = sqlite3.connect(work / STORE)
    try:
        db.executescript("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;" + _SCHEMA)
        load, hasher = LoadReport(), CatalogHasher()
        postings, fields = PostingsWriter(work, chunk_postings=CHUNK_POSTINGS), _FieldColumns()

        def on_row(rows: int) -> None:
            if progress is not None and rows % PROGRESS_EVERY == 0:
                progress(rows)

        duplicates = 0
        for path in paths:
            rows_before = load.rows
            for product in iter_products([path], load, on_row=on_row):
                ordinal = len(fields.prices)
                row = (ordinal, product.product_id, product.shop_id, product.title, ",".join(product.service))
                if db.execute(_INSERT, row).rowcount == 0:
                    duplicates += 1
                    reason = f"duplicate product_id {product.product_id!r}: the first one is kept"
                    load.reject(BadRow(str(path), load.rows - rows_before, reason))
                    continue
                db.execute(
                    "INSERT INTO documents (ordinal, doc) VALUES (?, ?)",
                    (ordinal, product_line(product).rstrip("\n")),
                )
                hasher.add(product)
                terms = analyze(product.search_text())
                postings.add(ordinal, terms)
                fields.add(len(terms), product.price, product.sold_count, product.service, product.shop_id)
                if (ordinal + 1) % COMMIT_EVERY == 0:
                    db.commit()
        if progress is not None:
            progress(load.rows)
        db.execute("CREATE INDEX products_shop ON products (shop_id, ordinal)")
        db.executemany(
            "INSERT INTO shops (code, shop_id, products) VALUES (?, ?, ?)",
            ((code, shop, fields.shop_sizes[code]) for shop, code in fields.shop_codes.items()),
        )
        stats = postings.finish()
        db.executemany(
            "INSERT INTO terms (term, start, df) VALUES (?, ?, ?)",
            (
                (term, int(stats.starts[i]), int(stats.doc_freqs[i]))
                for term, i in sorted(postings.vocabulary.items())
            ),
        )
        count = len(fields.prices)
        id_order = array(
            "q", (row[0] for row in db.execute("SELECT ordinal FROM products ORDER BY product_id"))
        )
        id_ranks = np.empty(count, dtype=np.uint32)
        id_ranks[np.frombuffer(id_order, dtype=np.int64) if count else []] = np.arange(count, dtype=np.uint32)
        db.commit()
    finally:
        db.close()
    norms = fields.save(work, id_ranks)
    write_impacts(work, stats, norms)
    version = hasher.version()
    files = {p.name: p.stat().st_size for p in sorted(work.iterdir())}
    manifest = {
        "format": FORMAT,
        "engine": ENGINE,
        "catalog_version": version,
        "products": count,
        "rows": load.rows,
        "bad_rows": load.bad,
        "duplicates": duplicates,
        "params": index_params(),
        "stats": {
            "doc_count": stats.doc_count,
            "total_terms": stats.total_terms,
            "terms": len(stats.doc_freqs),
            "postings": stats.postings,
        },
        "files": files,
    }
    (work / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return BuildReport(
        products=count,
        bad_rows=load.bad,
        seconds=time.perf_counter() - started,
        bytes_on_disk=sum(files.values()) + (work / MANIFEST).stat().st_size,
        catalog_version=version,
        rows=load.rows,
        duplicates=duplicates,
        terms=len(stats.doc_freqs),
        postings=stats.postings,
        bad_row_samples=tuple(str(b) for b in load.bad_rows[:20]),
    )
