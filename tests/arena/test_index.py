import json
import math
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena import indexer
from arena.analysis import analyze
from arena.catalog import CatalogHasher, iter_products
from arena.errors import CatalogError, SearchIndexError
from arena.index import SearchIndex, build_index, open_index
from arena.types import Product


@pytest.fixture(scope="module")
def catalog(fixture_catalog_path: Path) -> list[Product]:
    return list(iter_products([fixture_catalog_path]))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, fixture_catalog_path: Path) -> Path:
    path = tmp_path_factory.mktemp("index") / "index"
    build_index([fixture_catalog_path], path)
    return path


@pytest.fixture()
def index(built: Path) -> Iterator[SearchIndex]:
    with open_index(built) as opened:
        yield opened


def write_catalog(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))
    return path


def item(pid: str, title: str, **extra: Any) -> dict[str, Any]:
    return {
        "product_id": pid,
        "shop_id": extra.pop("shop_id", "s"),
        "title": title,
        "price": 1.0,
        "sold_count": 0,
    } | extra


def reference_ranking(products: list[Product], query: str) -> list[tuple[str, float]]:
    """Lucene's BM25 (k1=0.9, b=0.4) in plain float64, for documents shorter than 24 terms
    (whose lengths Lucene stores exactly), ordered by score rounded to 1e-4, then id."""
    docs = {p.product_id: Counter(analyze(p.search_text())) for p in products}
    lengths = {pid: sum(tf.values()) for pid, tf in docs.items()}
    assert max(lengths.values()) < 24
    n = sum(1 for length in lengths.values() if length)
    avgdl = sum(lengths.values()) / n
    scores: dict[str, float] = {}
    for term, boost in Counter(analyze(query)).items():
        df = sum(1 for tf in docs.values() if term in tf)
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for pid, tf in docs.items():
            if term in tf:
                norm = 0.9 * (0.6 + 0.4 * lengths[pid] / avgdl)
                scores[pid] = scores.get(pid, 0.0) + boost * idf * tf[term] / (tf[term] + norm)
    return sorted(scores.items(), key=lambda kv: (-round(kv[1], 4), kv[0]))


def test_build_reports_counts_and_the_catalog_version(
    built: Path, index: SearchIndex, catalog: list[Product]
) -> None:
    hasher = CatalogHasher()
    for product in catalog:
        hasher.add(product)
    manifest = json.loads((built / "manifest.json").read_text())
    assert index.catalog_version == manifest["catalog_version"] == hasher.version()
    assert len(index) == manifest["products"] == 20
    assert manifest["bad_rows"] == 0 and manifest["engine"] == "lucene-bm25-numpy"
    assert manifest["params"]["k1"] == 0.9 and manifest["params"]["b"] == 0.4


def test_build_report(tmp_path: Path, fixture_catalog_path: Path) -> None:
    seen: list[int] = []
    report = build_index([fixture_catalog_path], tmp_path / "i", progress=seen.append)
    assert (report.products, report.bad_rows, report.rows) == (20, 0, 20)
    assert report.bytes_on_disk == sum(f.stat().st_size for f in (tmp_path / "i").iterdir())
    assert seen[-1] == 20 and report.seconds > 0


def test_lookup_by_id(index: SearchIndex, catalog: list[Product]) -> None:
    assert index.product("1001") == catalog[0]
    assert index.product("nope") is None
    found = index.products(["2001", "nope", "1001", "2001"])
    assert found == {"2001": catalog[5], "1001": catalog[0]}
    assert index.products([]) == {}


def test_ordinals_follow_catalog_order(index: SearchIndex, catalog: list[Product]) -> None:
    assert [index.product_id_at(i) for i in range(len(index))] == [p.product_id for p in catalog]
    for bad in (-1, 20):
        with pytest.raises(IndexError):
            index.product_id_at(bad)


def test_shop_lookups(index: SearchIndex, catalog: list[Product]) -> None:
    sizes = Counter(p.shop_id for p in catalog)
    assert index.shop_product_ids("s6") == ["3001", "3002", "3003"]
    assert index.shop_product_ids("nowhere") == []
    for n in (1, 2, 3, 4):
        assert index.shops_with_at_least(n) == sorted(s for s, c in sizes.items() if c >= n)
    assert index.shops_with_at_least(3) == ["s6"]
    assert index.shops_with_at_least(2) == ["s1", "s10", "s11", "s2", "s4", "s6", "s8"]


def test_shorter_documents_rank_first_for_equal_term_frequency(index: SearchIndex) -> None:
    # chili powder: 4003 has 5 terms, 4002 has 7, 4001 has 8; each has both terms once.
    assert [h.product_id for h in index.hits("chili powder")] == ["4003", "4002", "4001"]


def test_hits_are_an_or_over_title_sku_and_attribute_values(index: SearchIndex) -> None:
    assert {h.product_id for h in index.hits("cymbal violin")} == {"2001", "2002", "2003"}
    assert [h.product_id for h in index.hits("pink")] == ["1002"]  # a sku value
    assert [h.product_id for h in index.hits("walking")] == ["1004"]  # an attribute value
    assert list(index.hits("sports trainer")) == []  # category and description are not indexed


def test_hits_carry_the_summary_fields(index: SearchIndex, catalog: list[Product]) -> None:
    hit = next(index.hits("zildjian"))
    product = catalog[6]
    assert (hit.product_id, hit.shop_id, hit.title, hit.price, hit.service, hit.sold_count) == (
        product.product_id,
        product.shop_id,
        product.title,
        product.price,
        product.service,
        product.sold_count,
    )
    assert hit.score > 0


@pytest.mark.parametrize(
    "query",
    [
        "running shoes",
        "stainless steel sponge holder",
        "bag bag chili",
        "kids",
        "women's shoes 12 inch",
        "bronze",
    ],
)
def test_scores_and_order_match_lucene_bm25(index: SearchIndex, catalog: list[Product], query: str) -> None:
    expected = reference_ranking(catalog, query)
    hits = list(index.hits(query))
    assert [h.product_id for h in hits] == [pid for pid, _ in expected]
    for hit, (_, score) in zip(hits, expected, strict=True):
        assert hit.score == pytest.approx(score, rel=1e-6)


@pytest.mark.parametrize(
    ("query", "same_as"),
    [
        ("nike AND adidas", "nike adidas"),
        ("nike OR NOT adidas", "nike adidas"),
        ('"running shoes"', "running shoes"),
        ("(running) || (shoes)", "running shoes"),
        ("-nike +adidas", "nike adidas"),
        ("nike^10 adidas~2", "nike 10 adidas 2"),
        ("cymb* bronz?", "cymb bronz"),
        ("[1 TO 5] {a TO b}", "1 5 b"),
    ],
)
def test_query_syntax_is_plain_text(index: SearchIndex, query: str, same_as: str) -> None:
    assert list(index.hits(query)) == list(index.hits(same_as))


@pytest.mark.parametrize(
    "query",
    ["title:nike", "contents:nike", "product_id:1001", "'; DROP TABLE products; --", "\x00", "\\", "*", "?"],
)
def test_field_and_sql_injection_is_inert(index: SearchIndex, query: str) -> None:
    assert list(index.hits(query)) == []
    assert index.product("1001") is not None


def test_huge_and_many_term_queries_do_not_fail(index: SearchIndex) -> None:
    assert [h.product_id for h in index.hits("chili " * 20_000)] == ["4003", "4002", "4001"]
    many = " ".join(f"t{i}" for i in range(3000)) + " chili"
    assert list(index.hits(many)) == []  # only the first 1024 distinct terms count, like Lucene's cap
    assert len(list(index.hits("powder " + " ".join(f"t{i}" for i in range(2000))))) == 3


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=300) | st.from_regex(r"[a-z0-9 :\"*()\-+^~\[\]{}!?&|']{0,60}", fullmatch=True))
def test_any_query_returns_hits_or_nothing(index: SearchIndex, query: str) -> None:
    hits = list(index.hits(query))
    assert len({h.product_id for h in hits}) == len(hits) <= 20
    rounded = [round(h.score, 4) for h in hits]
    assert rounded == sorted(rounded, reverse=True)


def test_concurrent_searches_agree_with_serial_ones(index: SearchIndex) -> None:
    queries = [
        "running shoes",
        "chili powder",
        "stainless steel",
        "cymbal",
        "wheel 12 inch",
        "kids toy",
        "bag",
    ]
    serial = {q: list(index.hits(q)) for q in queries}
    failures: list[str] = []

    def worker(offset: int) -> None:
        for i in range(60):
            q = queries[(i + offset) % len(queries)]
            if list(index.hits(q)) != serial[q] or index.product("1001") is None:
                failures.append(q)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_closed_index_refuses_use(built: Path) -> None:
    opened = open_index(built)
    opened.close()
    opened.close()
    with pytest.raises(SearchIndexError):
        opened.product("1001")
    with pytest.raises(SearchIndexError):
        list(opened.hits("chili"))


def test_duplicate_ids_keep_the_first_and_count_as_bad_rows(tmp_path: Path) -> None:
    rows: list[Any] = [item("a", "first red"), item("b", "blue"), item("a", "second green"), "{broken"]
    path = write_catalog(tmp_path / "c.jsonl", rows)
    report = build_index([path], tmp_path / "i")
    assert (report.products, report.bad_rows, report.duplicates, report.rows) == (2, 2, 1, 4)
    assert any("duplicate product_id 'a'" in line for line in report.bad_row_samples)
    with open_index(tmp_path / "i") as index:
        product = index.product("a")
        assert product is not None and product.title == "first red"
        assert list(index.hits("green")) == []
        assert len(index) == 2


def test_several_catalog_files_are_one_catalog(tmp_path: Path) -> None:
    one = write_catalog(tmp_path / "1.jsonl", [item("a", "red lamp")])
    two = write_catalog(tmp_path / "2.jsonl", [item("b", "red chair"), item("a", "dup")])
    report = build_index([one, two], tmp_path / "i")
    assert (report.products, report.duplicates) == (2, 1)
    with open_index(tmp_path / "i") as index:
        assert [h.product_id for h in index.hits("red")] == ["a", "b"]


def test_missing_catalog_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(CatalogError):
        build_index([tmp_path / "nope.jsonl"], tmp_path / "i")
    assert not (tmp_path / "i").exists()
    assert [p.name for p in tmp_path.iterdir()] == []  # the work directory is cleaned up


def test_empty_catalog_gives_an_empty_index(tmp_path: Path) -> None:
    path = write_catalog(tmp_path / "c.jsonl", [])
    assert build_index([path], tmp_path / "i").products == 0
    with open_index(tmp_path / "i") as index:
        assert len(index) == 0 and list(index.hits("anything")) == []
        assert index.shops_with_at_least(1) == []


def test_rebuild_is_deterministic(
    tmp_path: Path, fixture_catalog_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_index([fixture_catalog_path], tmp_path / "a")
    monkeypatch.setattr(indexer, "CHUNK_POSTINGS", 7)  # many spilled chunks, same result
    build_index([fixture_catalog_path], tmp_path / "b")
    a, b = tmp_path / "a", tmp_path / "b"
    assert (a / "manifest.json").read_text() == (b / "manifest.json").read_text()
    for npy in a.glob("*.npy"):
        assert npy.read_bytes() == (b / npy.name).read_bytes(), npy.name
    with open_index(a) as one, open_index(b) as two:
        for q in ("running shoes", "chili powder bag", "stainless"):
            assert list(one.hits(q)) == list(two.hits(q))


def test_rebuild_replaces_an_index_but_never_another_directory(
    tmp_path: Path, fixture_catalog_path: Path
) -> None:
    small = write_catalog(tmp_path / "c.jsonl", [item("a", "lamp")])
    build_index([fixture_catalog_path], tmp_path / "i")
    build_index([small], tmp_path / "i")
    with open_index(tmp_path / "i") as index:
        assert len(index) == 1
    other = tmp_path / "other"
    other.mkdir()
    (other / "precious.txt").write_text("keep me")
    with pytest.raises(SearchIndexError):
        build_index([small], other)
    assert (other / "precious.txt").read_text() == "keep me"


def corrupt_manifest(path: Path) -> None:
    (path / "manifest.json").write_text("{not json")


def drop_postings(path: Path) -> None:
    (path / "postings_docs.npy").unlink()


def truncate_store(path: Path) -> None:
    store = path / "store.sqlite"
    store.write_bytes(store.read_bytes()[:1000])


def garble_store(path: Path) -> None:
    store = path / "store.sqlite"
    data = store.read_bytes()
    store.write_bytes(b"\xff" * 100 + data[100:])


def garble_array(path: Path) -> None:
    array = path / "prices.npy"
    array.write_bytes(b"\x00" * array.stat().st_size)


def edit_manifest(**changes: Any) -> Any:
    def edit(path: Path) -> None:
        manifest = json.loads((path / "manifest.json").read_text())
        for key, value in changes.items():
            section, _, name = key.partition(".")
            if name:
                manifest[section][name] = value
            else:
                manifest[key] = value
        (path / "manifest.json").write_text(json.dumps(manifest))

    return edit


@pytest.mark.parametrize(
    "damage",
    [
        corrupt_manifest,
        drop_postings,
        truncate_store,
        garble_store,
        garble_array,
        edit_manifest(format="other/1"),
        edit_manifest(**{"params.k1": 1.2}),
        edit_manifest(**{"params.analyzer": "whitespace"}),
        edit_manifest(products=21),
        edit_manifest(**{"stats.postings": 3}),
        edit_manifest(stats={}),
    ],
)
def test_open_refuses_a_damaged_index(tmp_path: Path, fixture_catalog_path: Path, damage: Any) -> None:
    build_index([fixture_catalog_path], tmp_path / "i")
    damage(tmp_path / "i")
    with pytest.raises(SearchIndexError):
        open_index(tmp_path / "i")


def test_open_refuses_a_missing_index_or_another_catalog(tmp_path: Path, built: Path) -> None:
    with pytest.raises(SearchIndexError):
        open_index(tmp_path / "nothing")
    with pytest.raises(SearchIndexError, match="catalog"):
        open_index(built, catalog_version="c-0123")
    with open_index(
        built, catalog_version=json.loads((built / "manifest.json").read_text())["catalog_version"]
    ):
        pass
