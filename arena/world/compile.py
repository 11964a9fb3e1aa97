"""``compile_world``: a world pack from a seed and a base index (delta, vouchers, tasks, manifest)."""

from __future__ import annotations

import hashlib
import logging
import time

from arena.errors import WorldError
from arena.index import SearchIndex
from arena.world.changes import compile_changes
from arena.world.delta import compile_delta, compile_vouchers
from arena.world.overlay import WorldOverlay
from arena.world.pack import make_pack
from arena.world.seed import base_hash, part_rng, seed_bytes, world_seed
from arena.world.tasks import compile_tasks
from arena.world.types import WorldPack, WorldSpec

logger = logging.getLogger(__name__)


def compile_world(seed: bytes | str, base: SearchIndex, spec: WorldSpec | None = None) -> WorldPack:
    """Compile the world of ``seed`` over ``base``: the same seed and base give the same bytes anywhere.

    Raises:
        WorldError: an empty seed or an empty base.
    """
    spec = spec or WorldSpec()
    raw = seed_bytes(seed)
    if not raw:
        raise WorldError("a world needs a non-empty seed")
    if not len(base):
        raise WorldError("cannot compile a world over an empty index")
    started = time.perf_counter()
    identity = base_hash(base)
    world = world_seed(raw, identity)
    tag = "w" + hashlib.sha256(world + b"listing-ids").hexdigest()[:6]
    delta = compile_delta(base, part_rng(world, "delta"), spec, tag=tag)
    vouchers = compile_vouchers(base, part_rng(world, "vouchers"), spec)
    overlay = WorldOverlay(base, delta)
    tasks = compile_tasks(overlay, vouchers, spec, world)
    changed, tasks = compile_changes(overlay, tasks, part_rng(world, "changes"), spec)
    delta = changed.delta
    pack = make_pack(
        seed_hex=raw.hex(),
        base_hash=identity,
        catalog_version=base.catalog_version,
        spec=spec,
        delta=delta,
        vouchers=vouchers,
        tasks=tasks,
    )
    logger.info(
        "world_compiled world=%s tasks=%d new_listings=%d changes=%d seconds=%.2f",
        pack.manifest.world_id,
        len(tasks),
        len(delta.new_listings),
        len(delta.changes),
        time.perf_counter() - started,
    )
    return pack
