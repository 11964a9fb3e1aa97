import gzip
import json
from pathlib import Path

import pytest

from arena.catalog import CatalogHasher, LoadReport, iter_products, product_line
from arena.errors import CatalogError


def test_fixture_catalog_loads_every_product(fixture_catalog_path: Path) -> None:
    report = LoadReport()
    products = list(iter_products([fixture_catalog_path], report))
    assert len(products) == 20
    assert report.rows == 20 and report.bad == 0
    assert products[0].product_id == "1001"
    assert products[0].attributes["brand"] == ("nike",)


def test_documents_gz_and_bad_rows_are_reported_and_skipped(
    tmp_path: Path, fixture_catalog_path: Path
) -> None:
    good = [json.loads(line) for line in fixture_catalog_path.read_text().splitlines()[:2]]
    lines = [
        json.dumps({"id": good[0]["product_id"], "contents": "x", "product": good[0]}),
        "{not json",
        json.dumps({"id": "9", "contents": "x", "product": {**good[1], "price": -3}}),
        json.dumps([1, 2]),
        "",
        json.dumps(good[1]),
    ]
    path = tmp_path / "documents.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    report = LoadReport()
    ids = [p.product_id for p in iter_products([path], report)]
    assert ids == ["1001", "1002"]
    assert (report.rows, report.products, report.bad) == (5, 2, 3)
    assert [b.line for b in report.bad_rows] == [2, 3, 4]
    assert "price" in report.bad_rows[1].reason
    assert str(report.bad_rows[0]).startswith(f"{path}:2:")


def test_missing_file_is_our_error(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="not found"):
        list(iter_products([tmp_path / "nope.jsonl"]))


def test_truncated_gzip_is_our_error_after_the_rows_before_it(
    tmp_path: Path, fixture_catalog_path: Path
) -> None:
    whole = gzip.compress(fixture_catalog_path.read_bytes())
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(whole[: len(whole) * 2 // 3])
    seen: list[str] = []
    with pytest.raises(CatalogError, match="cannot read catalog file"):
        for product in iter_products([path]):
            seen.append(product.product_id)
    assert seen, "rows before the cut are still delivered"


def test_an_error_raised_by_the_consumer_is_not_relabelled(fixture_catalog_path: Path) -> None:
    # Only reading is guarded: an OSError from the caller's own work must surface unchanged.
    with pytest.raises(OSError, match="disk full"):
        for _ in iter_products([fixture_catalog_path]):
            raise OSError("disk full")


def test_catalog_version_depends_on_content_not_order(fixture_catalog_path: Path) -> None:
    products = list(iter_products([fixture_catalog_path]))
    forward, backward, changed = CatalogHasher(), CatalogHasher(), CatalogHasher()
    for p in products:
        forward.add(p)
    for p in reversed(products):
        backward.add(p)
    for p in products:
        changed.add(p.model_copy(update={"price": p.price + 1}) if p.product_id == "1001" else p)
    assert forward.version() == backward.version()
    assert forward.version() != changed.version()
    assert product_line(products[0]).endswith("\n")
