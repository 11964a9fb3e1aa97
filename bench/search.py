"""Search benchmark: index build time and size, find_product and lookup latency, QPS, engine comparison.

Engines compared on the same synthetic catalogs and the same analysed text:

- ``lucene-numpy``: the shipped engine (``arena.index``), Lucene's BM25 (k1=0.9, b=0.4) and
  Anserini's hit order reproduced exactly, SQLite product store;
- ``tantivy``: the Rust engine (PyPI ``tantivy``); its BM25 is fixed at k1=1.2, b=0.75, fed the
  same analysed terms (whitespace tokenizer), so differences are the scoring, not the analyzer;
- ``fts5``: SQLite FTS5 ``bm25()`` (also k1=1.2, b=0.75) over the same analysed terms.

For tantivy and FTS5 only the engine core is timed (top 50 of an OR query); for the shipped
engine both the core (first relevance batch) and the whole ``find_products`` call (scan,
filters, fetch of 50 summaries) are timed. Agreement is the share of queries whose top 10
equals the shipped engine's (as a set, and in order).

Catalogs come from ``arena catalog synth`` (generated once per size and seed into ``--work``),
or from ``--catalog N=PATH``. Queries are 1-4 consecutive words of the titles of randomly drawn
products (fixed seed).

Example: python bench/search.py --sizes 100000,1000000
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import random
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import tantivy

from arena.analysis import analyze, query_terms
from arena.catalog import iter_products, open_text, parse_product_row
from arena.index import build_index, open_index
from arena.search import find_products

RESULTS = Path(__file__).parent / "results" / "search.json"


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {
        "p50_ms": round(pick(0.50) * 1e3, 3),
        "p99_ms": round(pick(0.99) * 1e3, 3),
        "mean_ms": round(statistics.fmean(ordered) * 1e3, 3),
    }


def timed(fn: Callable[[Any], Any], inputs: list[Any]) -> tuple[dict[str, float], list[Any]]:
    for item in inputs[:10]:  # warm caches
        fn(item)
    samples, outputs = [], []
    for item in inputs:
        started = time.perf_counter()
        outputs.append(fn(item))
        samples.append(time.perf_counter() - started)
    return percentiles(samples), outputs


def qps(fn: Callable[[Any], Any], inputs: list[Any], threads: int) -> float:
    work = inputs * 2
    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(fn, work))
    return round(len(work) / (time.perf_counter() - started), 1)


def catalog_for(size: int, seed: int, work: Path, overrides: dict[int, Path]) -> tuple[Path, str]:
    if size in overrides:
        return overrides[size], f"file {overrides[size]}"
    path = work / f"synth-{size}-seed{seed}.jsonl"
    if not path.exists():
        arena = Path(sys.executable).with_name("arena")
        cmd = [
            str(arena),
            "catalog",
            "synth",
            "--products",
            str(size),
            "--seed",
            str(seed),
            "--out",
            str(path),
        ]
        subprocess.run(cmd, check=True)
    return path, f"arena catalog synth --products {size} --seed {seed}"


def sample_products(path: Path, size: int, count: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    wanted = set(rng.sample(range(size), min(count, size)))
    chosen = []
    with open_text(path) as lines:  # only the drawn rows are parsed
        for row, line in enumerate(lines):
            if row in wanted:
                product = parse_product_row(json.loads(line))
                chosen.append({"id": product.product_id, "title": product.title, "shop": product.shop_id})
    rng.shuffle(chosen)
    for item in chosen:
        words = item["title"].split()
        k = rng.randint(1, min(4, len(words)))
        start = rng.randint(0, len(words) - k)
        item["q"] = " ".join(words[start : start + k])
    return chosen


def _build_child(path: str, index: str, out: Any) -> None:
    report = build_index([Path(path)], Path(index))
    out.put({"seconds": report.seconds, "bytes": report.bytes_on_disk, "products": report.products})


def bench_lucene_numpy(catalog: Path, index_dir: Path, sample: list[dict[str, Any]]) -> dict[str, Any]:
    # Build in a child process so that its peak memory is measured alone.
    queue: Any = multiprocessing.get_context("fork").Queue()
    child = multiprocessing.get_context("fork").Process(
        target=_build_child, args=(str(catalog), str(index_dir), queue)
    )
    child.start()
    built = queue.get()
    child.join()
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    queries = [s["q"] for s in sample]
    with open_index(index_dir) as index:
        core, tops = timed(lambda q: next(index.ranked(q), (np.empty(0, np.uint32),))[0][:50], queries)
        plain, _ = timed(lambda q: find_products(index, q=q, page=1), queries)
        by_shop, _ = timed(lambda s: find_products(index, q=s["q"], page=1, shop_id=s["shop"]), sample)
        filtered, _ = timed(
            lambda q: find_products(
                index, q=q, page=1, price=(50.0, 5000.0), service=("COD",), sort="priceasc"
            ),
            queries,
        )
        ids = [s["id"] for s in sample]
        lookup, _ = timed(index.product, ids)
        lookup10, _ = timed(lambda i: index.products(ids[i : i + 10]), list(range(0, len(ids), 10)))
        top10 = [[index.product_id_at(int(o)) for o in top[:10]] for top in tops]
        result = {
            "build_seconds": round(built["seconds"], 1),
            "build_peak_rss_mib_max_child": round(peak_mib),
            "bytes_on_disk": built["bytes"],
            "core_top50": core,
            "find_product": plain,
            "find_product_shop_filter": by_shop,
            "find_product_price_service_sort": filtered,
            "lookup_product": lookup,
            "lookup_10_products": lookup10,
            "qps_find_product": {
                f"threads_{t}": qps(lambda q: find_products(index, q=q, page=1), queries, t)
                for t in (1, 2, 4)
            },
        }
    return result | {"_top10": top10}


def bench_tantivy(catalog: Path, directory: Path, sample: list[dict[str, Any]]) -> dict[str, Any]:
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("contents", tokenizer_name="terms", index_option="freq")
    builder.add_text_field("product_id", stored=True, tokenizer_name="raw")
    builder.add_float_field("price", fast=True)
    schema = builder.build()
    index = tantivy.Index(schema, path=str(directory))
    index.register_tokenizer("terms", tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build())
    started = time.perf_counter()
    writer = index.writer(heap_size=512_000_000, num_threads=1)
    for product in iter_products([catalog]):
        doc = tantivy.Document(
            contents=" ".join(analyze(product.search_text())), product_id=product.product_id
        )
        doc.add_float("price", product.price)
        writer.add_document(doc)
    writer.commit()
    writer.wait_merging_threads()
    seconds = time.perf_counter() - started
    index.reload()
    searcher = index.searcher()

    def query(q: str) -> Any:
        clauses = [
            (
                tantivy.Occur.Should,
                tantivy.Query.boost_query(tantivy.Query.term_query(schema, "contents", t), float(n)),
            )
            for t, n in query_terms(q).items()
        ]
        return tantivy.Query.boolean_query(clauses) if clauses else tantivy.Query.empty_query()

    queries = [s["q"] for s in sample]
    core, results = timed(lambda q: searcher.search(query(q), 50, count=False).hits, queries)
    top10 = [[searcher.doc(addr)["product_id"][0] for _, addr in hits[:10]] for hits in results]
    size = sum(f.stat().st_size for f in directory.rglob("*") if f.is_file())
    return {
        "build_seconds": round(seconds, 1),
        "bytes_on_disk": size,
        "core_top50": core,
        "qps_core_top50": {
            f"threads_{t}": qps(lambda q: searcher.search(query(q), 50, count=False), queries, t)
            for t in (1, 2)
        },
        "_top10": top10,
    }


def bench_fts5(catalog: Path, path: Path, sample: list[dict[str, Any]]) -> dict[str, Any]:
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=OFF")
    # Keep the analysed terms whole: their inner . , : _ ' must not split them again.
    tokenize = "unicode61 tokenchars '.,:_'''"
    db.execute(f'CREATE VIRTUAL TABLE docs USING fts5(contents, pid UNINDEXED, tokenize="{tokenize}")')
    started = time.perf_counter()
    batch = []
    for product in iter_products([catalog]):
        batch.append((" ".join(analyze(product.search_text())), product.product_id))
        if len(batch) == 10_000:
            db.executemany("INSERT INTO docs (contents, pid) VALUES (?, ?)", batch)
            batch.clear()
    db.executemany("INSERT INTO docs (contents, pid) VALUES (?, ?)", batch)
    db.commit()
    db.execute("INSERT INTO docs(docs) VALUES ('optimize')")
    db.commit()
    seconds = time.perf_counter() - started

    def search(q: str) -> list[str]:
        terms = query_terms(q)
        if not terms:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        sql = "SELECT pid FROM docs WHERE docs MATCH ? ORDER BY rank LIMIT 50"
        return [row[0] for row in db.execute(sql, (match,))]

    core, results = timed(search, [s["q"] for s in sample])
    return {
        "build_seconds": round(seconds, 1),
        "bytes_on_disk": path.stat().st_size,
        "core_top50": core,
        "_top10": [r[:10] for r in results],
    }


ENGINES: dict[str, Callable[[Path, Path, list[dict[str, Any]]], dict[str, Any]]] = {
    "lucene-numpy": bench_lucene_numpy,
    "tantivy": bench_tantivy,
    "fts5": bench_fts5,
}


def agreement(reference: list[list[str]], other: list[list[str]]) -> dict[str, float]:
    pairs = [(a, b) for a, b in zip(reference, other, strict=True) if a]
    return {
        "top10_same_set": round(sum(set(a) == set(b) for a, b in pairs) / len(pairs), 3),
        "top10_same_order": round(sum(a == b for a, b in pairs) / len(pairs), 3),
        "top1_same": round(sum(a[:1] == b[:1] for a, b in pairs) / len(pairs), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000", help="comma-separated catalog sizes")
    parser.add_argument("--quick", action="store_true", help="one small size, few queries (a smoke run)")
    parser.add_argument("--engines", default="lucene-numpy,tantivy,fts5")
    parser.add_argument("--fts5-max", type=int, default=1_000_000, help="skip FTS5 above this size")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--work", type=Path, default=Path("/tmp/arena-bench-search"))
    parser.add_argument(
        "--catalog", action="append", default=[], metavar="N=PATH", help="use this catalog for size N"
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--fresh", action="store_true", help="drop the other sizes already in --out")
    args = parser.parse_args()
    sizes = [20_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    n_queries = 50 if args.quick else args.queries
    engines = args.engines.split(",")
    overrides = {int(k): Path(v) for k, v in (item.split("=", 1) for item in args.catalog)}
    args.work.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "benchmark": "search",
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "sqlite": sqlite3.sqlite_version,
            "load_at_start": list(os.getloadavg()),
            "platform": platform.platform(),
        },
        "queries": n_queries,
        "seed": args.seed,
        "sizes": {},
    }
    if args.out.exists() and not args.fresh:  # keep the sizes measured by earlier runs
        results["sizes"] = json.loads(args.out.read_text()).get("sizes", {})
    for size in sizes:
        catalog, source = catalog_for(size, args.seed, args.work, overrides)
        sample = sample_products(catalog, size, n_queries, args.seed)
        entry: dict[str, Any] = {"catalog": source, "engines": {}}
        top10: dict[str, list[list[str]]] = {}
        for name in engines:
            if name == "fts5" and size > args.fts5_max:
                continue
            print(f"== size={size} engine={name}", file=sys.stderr, flush=True)
            measured = ENGINES[name](catalog, args.work / f"{name}-{size}", sample)
            top10[name] = measured.pop("_top10")
            entry["engines"][name] = measured
            print(json.dumps({name: measured}, indent=1), flush=True)
        if "lucene-numpy" in top10:
            entry["agreement_with_lucene_numpy"] = {
                name: agreement(top10["lucene-numpy"], lists)
                for name, lists in top10.items()
                if name != "lucene-numpy"
            }
        results["sizes"][str(size)] = entry
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(
        json.dumps({k: v.get("agreement_with_lucene_numpy") for k, v in results["sizes"].items()}, indent=1)
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
