import gzip
import hashlib
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from arena.catalog import LoadReport, iter_products, write_products
from arena.synth import MAX_VARIANTS, iter_synth_products, load_vocabulary
from arena.types import SERVICES

N = 3000


@pytest.fixture(scope="module")
def products() -> list:
    return list(iter_synth_products(N, seed=11))


@pytest.mark.parametrize("name", ["synth.jsonl", "synth.jsonl.gz"])
def test_same_seed_same_bytes(tmp_path: Path, name: str) -> None:
    first, second, other = tmp_path / "a" / name, tmp_path / "b" / name, tmp_path / "c" / name
    assert write_products(iter_synth_products(500, seed=5), first) == 500
    write_products(iter_synth_products(500, seed=5), second)
    write_products(iter_synth_products(500, seed=6), other)
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes() != other.read_bytes()
    if name.endswith(".gz"):
        assert gzip.decompress(first.read_bytes()).count(b"\n") == 500


def test_bytes_do_not_depend_on_hash_seed() -> None:
    # Set iteration order changes with PYTHONHASHSEED; the output must not.
    code = (
        "import hashlib, sys\n"
        "from arena.catalog import product_line\n"
        "from arena.synth import iter_synth_products\n"
        "h = hashlib.sha256()\n"
        "for p in iter_synth_products(300, 9):\n"
        "    h.update(product_line(p).encode())\n"
        "print(h.hexdigest())\n"
    )
    digests = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        run = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        digests.add(run.stdout.strip())
    expected = hashlib.sha256()
    from arena.catalog import product_line

    for p in iter_synth_products(300, 9):
        expected.update(product_line(p).encode())
    assert digests == {expected.hexdigest()}


def test_products_are_valid_and_ids_unique(tmp_path: Path, products: list) -> None:
    path = tmp_path / "c.jsonl"
    write_products(products, path)
    report = LoadReport()
    loaded = list(iter_products([path], report))
    assert report.bad == 0 and len(loaded) == N
    assert len({p.product_id for p in loaded}) == N
    assert all(len(p.product_id) == 10 and p.product_id.isdigit() for p in loaded)
    assert loaded == products


def test_schema_shapes(products: list) -> None:
    for p in products:
        assert p.price >= 1.0 and p.sold_count >= 0
        assert set(p.service) <= set(SERVICES) and list(p.service) == [s for s in SERVICES if s in p.service]
        assert list(p.sku_options) == [str(i) for i in range(1, len(p.sku_options) + 1)]
        assert len(p.sku_options) <= MAX_VARIANTS
        assert all(v == v.lower() for values in p.attributes.values() for v in values)
        assert p.category and p.title and p.product_url.endswith(f"-i{p.product_id}.html")
    variant_counts = Counter(len(p.sku_options) for p in products)
    assert variant_counts[0] > 0 and variant_counts[1] > 0 and variant_counts[MAX_VARIANTS] > 0


def test_distributions_are_long_tailed(products: list) -> None:
    shop_sizes = Counter(p.shop_id for p in products).values()
    assert min(shop_sizes) == 1 and max(shop_sizes) >= 50
    assert sum(1 for s in shop_sizes if s == 1) > len(shop_sizes) / 4
    sold = [p.sold_count for p in products]
    assert sold.count(0) > N / 5 and max(sold) > 100
    services = Counter(s for p in products for s in p.service)
    assert services["COD"] > services["freeShipping"] > services["flashsale"] > 0
    assert 0 < services["official"] < N / 5
    assert len({p.category for p in products}) >= 25
    assert len({p.title for p in products}) > 0.95 * N


def test_prices_follow_category_medians(products: list) -> None:
    by_category: dict[str, list[float]] = {}
    for p in products:
        by_category.setdefault(p.category, []).append(p.price)
    medians = {c.path: c.price_median for c in load_vocabulary().categories}
    cheap = min(medians, key=lambda c: medians[c])
    dear = max(medians, key=lambda c: medians[c])
    median = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    assert median(by_category[dear]) > 5 * median(by_category[cheap])


def test_generation_is_lazy_and_honours_excluded_ids() -> None:
    # A billion-product stream yields its first product at once: nothing is materialised.
    first = next(iter_synth_products(10**9, seed=1))
    assert first.product_id.isdigit()
    again = list(iter_synth_products(3, seed=1))
    skipped = list(iter_synth_products(3, seed=1, exclude_ids={again[0].product_id}))
    assert again[0].product_id not in {p.product_id for p in skipped}
    assert skipped[0].product_id == again[1].product_id


def test_vocabulary_has_a_few_dozen_categories() -> None:
    vocab = load_vocabulary()
    assert len(vocab.categories) >= 30
    for category in vocab.categories:
        assert category.nouns and category.brands and category.attributes and category.sku
        assert category.price_median > 0
    paths = [c.path for c in vocab.categories]
    assert len(set(paths)) == len(paths)
