"""A world pack on disk: canonical JSON parts, a manifest of their sha256, refused when any hash disagrees.

A pack directory holds ``delta.json``, ``vouchers.jsonl``, ``tasks.jsonl`` (canonical JSON:
sorted keys, no spaces, UTF-8, one object per line) and ``manifest.json``. Each part's hash is
the sha256 of exactly those bytes; the pack hash is the sha256 of the canonical manifest without
``pack_hash`` and ``world_id``, so it covers the inputs (seed, base, spec) and every part.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from arena.errors import WorldError
from arena.types import canonical_json
from arena.world.types import PackManifest, ShopVoucher, WorldDelta, WorldPack, WorldSpec, WorldTask

MANIFEST = "manifest.json"
DELTA, VOUCHERS, TASKS = "delta.json", "vouchers.jsonl", "tasks.jsonl"
PARTS = (DELTA, VOUCHERS, TASKS)
M = TypeVar("M", bound=BaseModel)


def _line(model: BaseModel) -> str:
    return canonical_json(model.model_dump(mode="json")) + "\n"


def part_bytes(
    delta: WorldDelta, vouchers: Sequence[ShopVoucher], tasks: Sequence[WorldTask]
) -> dict[str, bytes]:
    """Each part's canonical bytes, by file name."""
    return {
        DELTA: _line(delta).encode("utf-8"),
        VOUCHERS: "".join(_line(v) for v in vouchers).encode("utf-8"),
        TASKS: "".join(_line(t) for t in tasks).encode("utf-8"),
    }


def sha256(data: bytes) -> str:
    """The hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def pack_hash(
    *, seed_hex: str, base_hash: str, catalog_version: str, spec: WorldSpec, parts: dict[str, str]
) -> str:
    """The pack hash: sha256 over the canonical inputs and part hashes."""
    covered = {
        "format": PackManifest.model_fields["format"].default,
        "seed_hex": seed_hex,
        "base_hash": base_hash,
        "catalog_version": catalog_version,
        "spec": spec.model_dump(mode="json"),
        "parts": parts,
    }
    return sha256(canonical_json(covered).encode("utf-8"))


def make_pack(
    *,
    seed_hex: str,
    base_hash: str,
    catalog_version: str,
    spec: WorldSpec,
    delta: WorldDelta,
    vouchers: Sequence[ShopVoucher],
    tasks: Sequence[WorldTask],
) -> WorldPack:
    """Assemble a pack and its manifest from compiled parts, each read back from its canonical bytes.

    The parts are parsed back so that the compiled pack is the loaded one down to dict order:
    equal models may still dump to other bytes (a product's attributes in compile order, sorted
    on disk), and every validator, cached or not, must log the same result bytes.
    """
    data = part_bytes(delta, vouchers, tasks)
    parts = {name: sha256(part) for name, part in data.items()}
    delta = WorldDelta.model_validate_json(data[DELTA])
    vouchers = [ShopVoucher.model_validate_json(line) for line in data[VOUCHERS].splitlines()]
    tasks = [WorldTask.model_validate_json(line) for line in data[TASKS].splitlines()]
    digest = pack_hash(
        seed_hex=seed_hex, base_hash=base_hash, catalog_version=catalog_version, spec=spec, parts=parts
    )
    manifest = PackManifest(
        world_id=f"w-{digest[:16]}",
        seed_hex=seed_hex,
        base_hash=base_hash,
        catalog_version=catalog_version,
        spec=spec,
        parts=parts,
        pack_hash=digest,
    )
    return WorldPack(manifest=manifest, delta=delta, vouchers=tuple(vouchers), tasks=tuple(tasks))


def save_pack(pack: WorldPack, directory: Path) -> Path:
    """Write a pack into ``directory`` (created; the manifest last, so a partial write is no pack).

    Raises:
        WorldError: ``directory`` exists and is not empty or not a pack.
    """
    directory = Path(directory)
    if directory.exists() and any(directory.iterdir()) and not (directory / MANIFEST).is_file():
        raise WorldError(
            f"refusing to write a world pack into {directory}: a non-empty directory that is not a pack"
        )
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MANIFEST).unlink(missing_ok=True)
    for name, data in part_bytes(pack.delta, pack.vouchers, pack.tasks).items():
        _write(directory / name, data)
    text = (
        json.dumps(pack.manifest.model_dump(mode="json"), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    )
    _write(directory / MANIFEST, text.encode("utf-8"))
    return directory


def _write(path: Path, data: bytes) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def load_manifest(directory: Path) -> PackManifest:
    """Read and validate a pack's manifest (parts unchecked).

    Raises:
        WorldError: no manifest, or one that does not parse.
    """
    path = Path(directory) / MANIFEST
    try:
        return PackManifest.model_validate_json(path.read_bytes())
    except FileNotFoundError as exc:
        raise WorldError(f"no world pack at {directory} (missing {MANIFEST})") from exc
    except (OSError, ValidationError) as exc:
        raise WorldError(f"world pack {directory}: unreadable {MANIFEST}: {_first(exc)}") from exc


def load_pack(directory: Path) -> WorldPack:
    """Load a pack, refusing it (nothing loaded) when any part's bytes or the pack hash disagree.

    Raises:
        WorldError: missing or unreadable files, a hash mismatch (the message names the part),
            or a part that does not parse.
    """
    directory = Path(directory)
    manifest = load_manifest(directory)
    if sorted(manifest.parts) != sorted(PARTS):
        raise WorldError(
            f"world pack {directory}: the manifest lists parts {sorted(manifest.parts)}, "
            f"expected {sorted(PARTS)}"
        )
    data: dict[str, bytes] = {}
    for name in PARTS:
        try:
            data[name] = (directory / name).read_bytes()
        except OSError as exc:
            raise WorldError(f"world pack {directory}: part {name} is missing or unreadable") from exc
        if sha256(data[name]) != manifest.parts[name]:
            raise WorldError(
                f"world pack {directory}: part {name} does not match its manifest hash (tampered or corrupt)"
            )
    expected = pack_hash(
        seed_hex=manifest.seed_hex,
        base_hash=manifest.base_hash,
        catalog_version=manifest.catalog_version,
        spec=manifest.spec,
        parts=manifest.parts,
    )
    if expected != manifest.pack_hash or manifest.world_id != f"w-{expected[:16]}":
        raise WorldError(f"world pack {directory}: the manifest's pack hash does not match its contents")
    delta = _parse(DELTA, data[DELTA], WorldDelta.model_validate_json, directory)[0]
    vouchers = _parse(VOUCHERS, data[VOUCHERS], ShopVoucher.model_validate_json, directory)
    tasks = _parse(TASKS, data[TASKS], WorldTask.model_validate_json, directory)
    return WorldPack(manifest=manifest, delta=delta, vouchers=tuple(vouchers), tasks=tuple(tasks))


def _parse(name: str, data: bytes, parse: Callable[[bytes], M], directory: Path) -> list[M]:
    rows: list[M] = []
    for number, line in enumerate(data.splitlines(), start=1):
        try:
            rows.append(parse(line))
        except ValidationError as exc:
            raise WorldError(f"world pack {directory}: part {name} line {number}: {_first(exc)}") from exc
    if name == DELTA and len(rows) != 1:
        raise WorldError(f"world pack {directory}: part {name} must hold exactly one object")
    return rows


def _first(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        return f"{'.'.join(str(p) for p in err['loc']) or 'row'}: {err['msg']}"
    return str(exc)


def pack_summary(pack: WorldPack) -> dict[str, Any]:
    """A pack's summary: identity, the count of each delta kind, vouchers and tasks."""
    manifest, delta = pack.manifest, pack.delta
    as_of = manifest.spec.as_of
    return {
        "world_id": manifest.world_id,
        "seed_hex": manifest.seed_hex,
        "base_hash": manifest.base_hash,
        "catalog_version": manifest.catalog_version,
        "pack_hash": manifest.pack_hash,
        "as_of": as_of.isoformat(),
        "delta": {
            "price_moves": len(delta.price_moves),
            "stock_levels": len(delta.stock),
            "stockouts": sum(1 for s in delta.stock if s.stock == 0),
            "new_listings": len(delta.new_listings),
            "delisted": len(delta.delisted),
            "changes": len(delta.changes),
        },
        "vouchers": {
            "total": len(pack.vouchers),
            "valid": sum(1 for v in pack.vouchers if v.valid_on(as_of)),
        },
        "tasks": {
            "total": len(pack.tasks),
            "cheapest_in_stock": sum(1 for t in pack.tasks if t.basis == "cheapest_in_stock"),
            "world_voucher": sum(1 for t in pack.tasks if t.basis == "world_voucher"),
            "held_back_constraints": sum(len(t.profile.held_back) for t in pack.tasks),
            "revised": sum(1 for t in pack.tasks if t.revisions),
        },
    }
