"""Catalog loading: stream products from ShoppingBench documents or plain product JSONL, reporting bad rows.

Two row shapes are accepted, per line, in ``.jsonl`` or ``.jsonl.gz`` files:

- ShoppingBench's ``documents.jsonl``: ``{"id": ..., "contents": ..., "product": {...}}``;
- plain product JSONL: the product object itself.

A bad row (invalid JSON, wrong shape, failed validation) is reported with file, line and
reason, counted, and skipped: it neither aborts the import nor vanishes silently.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from arena.errors import CatalogError
from arena.types import Product, validate_row

logger = logging.getLogger(__name__)

# Keep at most this many bad-row reports in memory; the count is always exact.
MAX_REPORTED_BAD_ROWS = 1000


@dataclass(frozen=True)
class BadRow:
    """One rejected input row: where it was and why."""

    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


@dataclass
class BadRowLog:
    """Bad rows of a file load: the exact count, the first ``MAX_REPORTED_BAD_ROWS`` reports kept."""

    bad: int = 0
    bad_rows: list[BadRow] = field(default_factory=list)
    # The log event name, so a catalog's and a task file's bad rows read apart in the logs.
    event = "bad_row"

    def reject(self, row: BadRow) -> None:
        """Count a bad row and keep its report while under the cap."""
        self.bad += 1
        if len(self.bad_rows) < MAX_REPORTED_BAD_ROWS:
            self.bad_rows.append(row)
        logger.warning("%s path=%s line=%d reason=%s", self.event, row.path, row.line, row.reason)


@dataclass
class LoadReport(BadRowLog):
    """Running totals of a catalog load: rows read, products accepted, bad rows (first N kept)."""

    rows: int = 0
    products: int = 0
    event = "catalog_bad_row"


def open_text(path: Path) -> IO[str]:
    """Open a text file for reading, transparently decompressing ``.gz``."""
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return path.open("r", encoding="utf-8")


def numbered_lines(path: Path, what: str, error: Callable[[str], Exception]) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, line)`` for each non-blank line of a plain or gzipped text file.

    Raises:
        ``error(message)``: the file is missing or cannot be read to its end (a truncated gzip,
        bad UTF-8). Only reading is guarded: what the caller does with a line raises its own errors.
    """
    if not path.is_file():
        raise error(f"{what} not found: {path}")
    try:
        with open_text(path) as handle:
            for line_no, line in enumerate(handle, start=1):
                if line.strip():
                    yield line_no, line
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise error(f"cannot read {what} {path}: {exc}") from exc


def parse_product_row(row: Any) -> Product:
    """Turn one decoded JSON row (document or plain product) into a Product.

    Raises:
        ValueError: the row has the wrong shape or fails validation (message says why).
    """
    if isinstance(row, dict) and "product" in row and "contents" in row:
        if not isinstance(row["product"], dict):
            raise ValueError("document row has no product object")
        row = row["product"]
    return validate_row(Product, row)


def iter_products(
    paths: Iterable[Path | str],
    report: LoadReport | None = None,
    *,
    on_row: Callable[[int], None] | None = None,
) -> Iterator[Product]:
    """Stream products from catalog files, one line at a time (never the whole file in memory).

    Args:
        paths: ``.jsonl`` or ``.jsonl.gz`` files, documents or plain products.
        report: totals to update; bad rows are recorded there and skipped.
        on_row: called with the running row count (for progress bars).

    Raises:
        CatalogError: a file is missing or unreadable (our input, not a bad row).
    """
    report = report if report is not None else LoadReport()
    for raw_path in paths:
        path = Path(raw_path)
        for line_no, line in numbered_lines(path, "catalog file", CatalogError):
            report.rows += 1
            if on_row is not None:
                on_row(report.rows)
            try:
                product = parse_product_row(json.loads(line))
            except ValueError as exc:  # json.JSONDecodeError is a ValueError
                report.reject(BadRow(str(path), line_no, str(exc)))
                continue
            report.products += 1
            yield product


def product_line(product: Product) -> str:
    """Serialise a product as one canonical plain-JSONL line (stable bytes for the same product)."""
    return json.dumps(product.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":")) + "\n"


class CatalogHasher:
    """Accumulates the catalog version: a sha256 over canonical product lines in product-id order.

    Callers feed products in any order; the digest only depends on the set of products, because
    each product's line hash is combined order-independently (sorted at the end).
    """

    def __init__(self) -> None:
        self._line_hashes: list[bytes] = []

    def add(self, product: Product) -> None:
        """Include one product."""
        self._line_hashes.append(hashlib.sha256(product_line(product).encode("utf-8")).digest())

    def version(self) -> str:
        """Return the catalog version string (``c-`` plus 32 hex digits)."""
        digest = hashlib.sha256()
        for item in sorted(self._line_hashes):
            digest.update(item)
        return f"c-{digest.hexdigest()[:32]}"


def open_output(path: Path) -> IO[str]:
    """Open a catalog file for writing, gzip-compressed when the name ends in ``.gz``.

    The gzip header carries no file name and a zero time stamp, so equal content gives equal
    bytes (synthetic catalogs promise "same seed, same bytes").
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".gz":
        raw = path.open("wb")
        compressed = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6)
        # Closing the wrapper closes the gzip stream; the raw file must be closed with it.
        return _ClosingTextWrapper(compressed, raw)
    return path.open("w", encoding="utf-8", newline="\n")


class _ClosingTextWrapper(io.TextIOWrapper):
    """A UTF-8 text wrapper over a gzip stream that also closes the underlying file."""

    def __init__(self, compressed: gzip.GzipFile, raw: IO[bytes]) -> None:
        super().__init__(compressed, encoding="utf-8", newline="\n")
        self._raw = raw

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()


def write_products(
    products: Iterable[Product], path: Path, *, on_product: Callable[[int], None] | None = None
) -> int:
    """Stream products to a plain product JSONL file (``.gz`` compresses), one `product_line` each.

    Args:
        products: any iterable; consumed once, never held in memory.
        path: the output file; parent folders are created.
        on_product: called with the running count after each product (for progress).

    Returns:
        The number of products written.
    """
    count = 0
    with open_output(path) as handle:
        for product in products:
            handle.write(product_line(product))
            count += 1
            if on_product is not None:
                on_product(count)
    return count
