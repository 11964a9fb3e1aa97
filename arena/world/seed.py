"""Where a world's randomness comes from: sha256(seed || "arena.world/1" || base index hash), split by part.

Nothing else feeds a world: never Python's ``hash()``, set order, dict order of untrusted input
or the clock. Each part (delta, vouchers, tasks) draws from its own ``random.Random`` seeded
from sha256(world seed || part name), so resizing one part never shifts another's draws.
"""

from __future__ import annotations

import hashlib
import random

from arena.index import SearchIndex
from arena.types import canonical_json
from arena.world.types import WORLD_FORMAT


def seed_bytes(seed: bytes | str) -> bytes:
    """The seed as bytes (a string is its UTF-8 encoding)."""
    return seed.encode("utf-8") if isinstance(seed, str) else bytes(seed)


def base_hash(base: SearchIndex) -> str:
    """The base index's identity: sha256 of its canonical manifest (catalog version, counts, files)."""
    return hashlib.sha256(canonical_json(base.manifest).encode("utf-8")).hexdigest()


def world_seed(seed: bytes | str, base: str) -> bytes:
    """The world seed: sha256(seed || "arena.world/1" || base hash hex); unambiguous as the tail is fixed."""
    return hashlib.sha256(seed_bytes(seed) + WORLD_FORMAT.encode("ascii") + base.encode("ascii")).digest()


def part_seed(world: bytes, part: str) -> int:
    """The integer seed of one part's random source."""
    return int.from_bytes(hashlib.sha256(world + part.encode("ascii")).digest(), "big")


def part_rng(world: bytes, part: str) -> random.Random:
    """One part's random source (``random.Random`` from an int is the same on every platform)."""
    return random.Random(part_seed(world, part))
