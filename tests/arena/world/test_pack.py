"""save_pack / load_pack: canonical parts round-trip; a pack with a bad hash is refused, naming the part."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena.errors import WorldError
from arena.index import SearchIndex
from arena.tools import ToolContext, run_tool
from arena.world.compile import compile_world
from arena.world.overlay import WorldOverlay
from arena.world.pack import DELTA, MANIFEST, TASKS, VOUCHERS, load_pack, save_pack
from arena.world.types import WorldPack


@pytest.fixture(scope="module")
def pack(world_base: SearchIndex) -> WorldPack:
    return compile_world("pack-test", world_base)


def test_a_saved_pack_loads_back_equal(pack: WorldPack, tmp_path: Path) -> None:
    assert load_pack(save_pack(pack, tmp_path / "w")) == pack


def test_a_compiled_pack_answers_every_tool_byte_for_byte_as_its_loaded_copy(
    world_base: SearchIndex, pack: WorldPack, tmp_path: Path
) -> None:
    """A validator that compiled the world and one that loaded it from its cache (or offline
    judging from the pack) must log the same result bytes; equal models are not enough, as a
    dict's order survives equality but not ``json.dumps``."""
    loaded = load_pack(save_pack(pack, tmp_path / "w"))
    compiled, reloaded = WorldOverlay(world_base, pack.delta), WorldOverlay(world_base, loaded.delta)
    ids = [n.product.product_id for n in pack.delta.new_listings] + [
        m.product_id for m in pack.delta.price_moves
    ]
    for product_id in ids:
        arguments = json.dumps({"product_ids": product_id})
        assert (
            run_tool("view_product_information", arguments, ToolContext(index=compiled)).content
            == run_tool("view_product_information", arguments, ToolContext(index=reloaded)).content
        ), product_id
    assert [t.model_dump_json() for t in pack.tasks] == [t.model_dump_json() for t in loaded.tasks]


@pytest.mark.parametrize("part", [DELTA, VOUCHERS, TASKS])
def test_a_tampered_part_is_refused_by_name(pack: WorldPack, tmp_path: Path, part: str) -> None:
    directory = save_pack(pack, tmp_path / "w")
    data = (directory / part).read_bytes()
    (directory / part).write_bytes(data.replace(b"0", b"1", 1) if b"0" in data else data + b"\n")
    with pytest.raises(WorldError, match=f"part {part} does not match"):
        load_pack(directory)


def test_a_missing_part_is_refused(pack: WorldPack, tmp_path: Path) -> None:
    directory = save_pack(pack, tmp_path / "w")
    (directory / VOUCHERS).unlink()
    with pytest.raises(WorldError, match=f"part {VOUCHERS} is missing"):
        load_pack(directory)


def test_a_manifest_whose_pack_hash_lies_is_refused(pack: WorldPack, tmp_path: Path) -> None:
    directory = save_pack(pack, tmp_path / "w")
    manifest = json.loads((directory / MANIFEST).read_text())
    manifest["spec"]["price_moves"] += 1  # the parts still match; the inputs no longer do
    (directory / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(WorldError, match="pack hash"):
        load_pack(directory)


def test_no_manifest_is_no_pack(tmp_path: Path) -> None:
    with pytest.raises(WorldError, match="no world pack"):
        load_pack(tmp_path)


def test_saving_over_a_foreign_directory_is_refused(pack: WorldPack, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(WorldError, match="not a pack"):
        save_pack(pack, tmp_path)


def test_parts_are_canonical_json_lines(pack: WorldPack, tmp_path: Path) -> None:
    directory = save_pack(pack, tmp_path / "w")
    for line in (directory / TASKS).read_text(encoding="utf-8").splitlines():
        assert line == json.dumps(json.loads(line), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
