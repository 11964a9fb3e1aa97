"""Where a world's randomness comes from: sha256(seed || "arena.world/1" || base index hash), split by part.

In validator rounds the seed (``round_seed``) mixes the hash of a final block a fixed number of
blocks after the world round's start (``world_round_at``), the netuid, the round index and the
validator's own secret of that round (``arena.world.commitment``): nobody knows it before the
validator reveals the secret, after the round, and anyone can then recompute it.

Nothing else feeds a world: never Python's ``hash()``, set order, dict order of untrusted input
or the clock. Each part (delta, vouchers, tasks) draws from its own ``random.Random`` seeded
from sha256(world seed || part name), so resizing one part never shifts another's draws.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from arena.index import SearchIndex
from arena.types import canonical_json
from arena.world.commitment import SECRET_BYTES
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


ROUND_SEED_LABEL = b"arena.round-seed/2"


@dataclass(frozen=True)
class WorldRound:
    """Which world a chain block falls in: its index, the block it starts at, the block seeding it."""

    index: int
    start_block: int
    seed_block: int


def world_round_at(block: int, *, period: int, delay: int) -> WorldRound | None:
    """The latest world round whose seed block the chain has produced by ``block`` (None: none yet).

    World round ``k`` starts at block ``k * period``; its seed is the hash of block
    ``k * period + delay``, unknown to anyone until that block is made. A validator at ``block``
    uses the newest round whose seed block is at or below it, so every validator between two seed
    blocks compiles the same world, whatever its own round cadence.

    Raises:
        ValueError: ``period`` < 1, or ``delay`` outside ``0..period-1``.
    """
    if period < 1 or not 0 <= delay < period:
        raise ValueError(f"need period >= 1 and 0 <= delay < period, got period={period} delay={delay}")
    if block < delay:
        return None
    index = (block - delay) // period
    return WorldRound(index=index, start_block=index * period, seed_block=index * period + delay)


def round_seed(block_hash: bytes | str, *, netuid: int, round_index: int, secret: bytes) -> bytes:
    """A world round's seed: sha256("arena.round-seed/2" || netuid (u16) || round (u64) || secret || hash).

    ``secret`` is the validator's secret of this round (32 bytes, ``arena.world.commitment``):
    without it the seed is public the moment its block is, and anyone could compile the world
    and read its gold before the tasks are served. ``block_hash`` is the seed block's hash: raw
    bytes, or hex text (``0x`` optional, as the chain gives it). The label, the fixed-width
    integers and the fixed-width secret come first, so the concatenation is unambiguous. The
    result goes into ``world_seed`` as the seed bytes (with the base hash).

    Raises:
        ValueError: a netuid or round index out of range, a secret of another length, or a hash
            that is empty or not hex.
    """
    if not 0 <= netuid < 1 << 16 or not 0 <= round_index < 1 << 64:
        raise ValueError(f"netuid {netuid} or round index {round_index} out of range")
    if len(secret) != SECRET_BYTES:
        raise ValueError(f"a round secret has {SECRET_BYTES} bytes, not {len(secret)}")
    raw = bytes.fromhex(block_hash.removeprefix("0x")) if isinstance(block_hash, str) else bytes(block_hash)
    if not raw:
        raise ValueError("a round seed needs the seed block's hash")
    head = ROUND_SEED_LABEL + netuid.to_bytes(2, "big") + round_index.to_bytes(8, "big")
    return hashlib.sha256(head + secret + raw).digest()
