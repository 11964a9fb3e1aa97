"""compile_world: one seed and base give the same bytes in any process; ground truth follows the world."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from arena.errors import WorldError
from arena.index import SearchIndex
from arena.world.compile import compile_world
from arena.world.overlay import WorldOverlay
from arena.world.pack import PARTS, save_pack
from arena.world.seed import world_seed
from arena.world.tasks import cheapest_in_stock
from arena.world.types import NewListing, StockLevel, WorldSpec

_COMPILE = """
import sys
from pathlib import Path
from arena.index import open_index
from arena.world.compile import compile_world
from arena.world.pack import save_pack
with open_index(Path(sys.argv[1])) as base:
    save_pack(compile_world(sys.argv[2], base), Path(sys.argv[3]))
"""


def _compile_in_process(base_dir: Path, seed: str, out: Path) -> dict[str, bytes]:
    subprocess.run([sys.executable, "-c", _COMPILE, str(base_dir), seed, str(out)], check=True, timeout=300)
    return {name: (out / name).read_bytes() for name in (*PARTS, "manifest.json")}


def test_two_processes_compile_the_same_bytes(world_base_dir: Path, tmp_path: Path) -> None:
    first = _compile_in_process(world_base_dir, "round-7", tmp_path / "a")
    second = _compile_in_process(world_base_dir, "round-7", tmp_path / "b")
    assert first == second
    assert b'"pack_hash"' in first["manifest.json"]


def test_in_process_compile_matches_a_subprocess(
    world_base: SearchIndex, world_base_dir: Path, tmp_path: Path
) -> None:
    theirs = _compile_in_process(world_base_dir, "round-7", tmp_path / "sub")
    save_pack(compile_world("round-7", world_base), tmp_path / "here")
    assert {name: (tmp_path / "here" / name).read_bytes() for name in theirs} == theirs


def test_a_different_seed_gives_a_different_world(world_base: SearchIndex) -> None:
    one, other = compile_world("round-7", world_base), compile_world("round-8", world_base)
    assert one.manifest.pack_hash != other.manifest.pack_hash
    assert one.delta != other.delta


def test_str_and_bytes_seeds_agree_and_the_seed_is_bound_to_the_base(world_base: SearchIndex) -> None:
    assert compile_world("s", world_base).manifest == compile_world(b"s", world_base).manifest
    assert world_seed(b"s", "a" * 64) != world_seed(b"s", "b" * 64)


def test_the_pack_holds_every_kind_of_change_and_both_task_bases(world_base: SearchIndex) -> None:
    pack = compile_world("round-7", world_base)
    spec = pack.manifest.spec
    assert len(pack.delta.price_moves) == spec.price_moves and len(pack.delta.delisted) == spec.delistings
    assert pack.delta.new_listings and any(s.stock == 0 for s in pack.delta.stock)
    assert len(pack.vouchers) == spec.vouchers
    bases = [t.basis for t in pack.tasks]
    assert bases.count("cheapest_in_stock") == spec.product_tasks and "world_voucher" in bases
    for task in pack.tasks:
        if task.basis == "world_voucher":
            voucher = next(v for v in pack.vouchers if v.voucher_id == task.voucher_id)
            assert voucher.valid_on(spec.as_of)
        else:
            assert task.task.gold[0].product_id in task.candidates and task.profile.wants_cheapest_in_stock


def test_an_empty_seed_is_refused(world_base: SearchIndex) -> None:
    with pytest.raises(WorldError, match="seed"):
        compile_world(b"", world_base)


def test_the_ground_truth_moves_when_the_cheapest_listing_stocks_out(world_base: SearchIndex) -> None:
    pack = compile_world("round-7", world_base, WorldSpec(held_back=0))
    world = WorldOverlay(world_base, pack.delta)
    compiled = next(t for t in pack.tasks if t.basis == "cheapest_in_stock")
    gold = world.product(compiled.task.gold[0].product_id)
    assert gold is not None
    again = cheapest_in_stock(compiled.task, world, random.Random(0), held_back=0)
    assert again is not None and again.task.gold[0].product_id == gold.product_id

    # A dearer offer of the same product, in stock; then the cheapest one sells out.
    dearer = gold.model_copy(update={"product_id": f"{gold.product_id}-dearer", "price": gold.price + 1})
    stock = tuple(s for s in pack.delta.stock if s.product_id != gold.product_id)
    changed_delta = pack.delta.model_copy(
        update={
            "stock": (*stock, StockLevel(product_id=gold.product_id, stock=0)),
            "new_listings": (
                *pack.delta.new_listings,
                NewListing(derived_from=gold.product_id, product=dearer),
            ),
        }
    )
    changed = cheapest_in_stock(
        compiled.task, WorldOverlay(world_base, changed_delta), random.Random(0), held_back=0
    )
    assert changed is not None
    new_gold = changed.task.gold[0].product_id
    assert new_gold != gold.product_id and gold.product_id in changed.candidates
    assert WorldOverlay(world_base, changed_delta).products([new_gold])[new_gold].price <= dearer.price
