"""World rounds: the round's seed read from the chain, its pack compiled (or loaded by seed), its overlay.

The seed of world round ``k`` is ``arena.world.seed.round_seed`` of the hash of block
``k * period + delay`` (``world_round_at``), the netuid and ``k``: nobody knows it before that
block, and every validator reads the same hash. The pack is ``compile_world(seed, base)`` with the
protocol's default ``WorldSpec``, so every validator over the same base index compiles the same
bytes. A compiled pack is kept under ``<cache>/<world seed hex prefix>``: a restart, or a second
round in the same world, loads it (verified part by part) instead of compiling it again; a cached
pack that fails verification or belongs to other inputs is compiled again over it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from arena.errors import WorldError
from arena.index import SearchIndex
from arena.tools import ToolContext
from arena.types import Task, ToolLogEntry
from arena.world.compile import compile_world
from arena.world.overlay import WorldOverlay
from arena.world.pack import load_pack, save_pack
from arena.world.seed import WorldRound, base_hash, round_seed, world_round_at, world_seed
from arena.world.shopper import ShopperSession
from arena.world.types import WorldPack, WorldSpec
from judging.world import AtAnswer, WorldJudging
from neurons import metrics
from neurons.validator.settings import WorldConfig

logger = logging.getLogger(__name__)

PackSource = Literal["compiled", "cached"]


class BlockHashes(Protocol):
    """What world rounds need of the chain (``neurons.chain.client.BittensorChain``)."""

    async def block_hash(self, block: int) -> str | None:
        """The hash of ``block``, or None while it is not produced yet."""
        ...


@dataclass(frozen=True)
class RoundWorld:
    """The world a round runs on: where its seed came from, the pack over the base, and its tools."""

    at: WorldRound
    block_hash: str
    world: WorldJudging
    context: ToolContext
    source: PackSource

    @property
    def pack(self) -> WorldPack:
        """The round's world pack."""
        return self.world.pack

    @property
    def overlay(self) -> WorldOverlay:
        """The pack's delta over the base index: what the round's tools answer from."""
        return self.world.overlay

    @property
    def world_id(self) -> str:
        """The pack's world id (``w-`` and 16 hex characters of the pack hash)."""
        return self.world.world_id

    @property
    def pack_hash(self) -> str:
        """The pack hash: covers the seed, the base, the spec and every part."""
        return self.world.pack_hash

    def at_answer(self, task: Task, log: Sequence[ToolLogEntry]) -> AtAnswer:
        """What an episode's answer is judged against (``judging.world.WorldJudging.against``)."""
        return self.world.against(task, log, self.context.toolset)

    def shopper(self, task_id: str) -> ShopperSession | None:
        """A fresh simulated shopper for one episode of the task, where the round's tool set can ask."""
        return self.world.shopper(task_id, self.context.toolset)


def pack_directory(cache: Path, seed: bytes, base: str) -> Path:
    """Where the pack of ``seed`` over the base with hash ``base`` is kept."""
    return cache / world_seed(seed, base).hex()[:32]


def load_or_compile(index: SearchIndex, seed: bytes, cache: Path) -> tuple[WorldPack, PackSource]:
    """The pack of ``seed`` over ``index``: loaded from the cache when it is there and whole, else compiled.

    Blocking (compiling is CPU work): run it in a thread.

    Raises:
        WorldError: the world cannot be compiled (an empty base), or the cache cannot be written.
    """
    identity = base_hash(index)
    directory = pack_directory(cache, seed, identity)
    spec = WorldSpec()
    if (directory / "manifest.json").is_file():
        try:
            pack = load_pack(directory)
        except WorldError as exc:
            logger.warning("world_cache_refused dir=%s error=%s", directory, exc)
        else:
            manifest = pack.manifest
            if manifest.seed_hex == seed.hex() and manifest.base_hash == identity and manifest.spec == spec:
                return pack, "cached"
            logger.warning("world_cache_mismatch dir=%s world=%s", directory, manifest.world_id)
    pack = compile_world(seed, index, spec)
    save_pack(pack, directory)
    return pack, "compiled"


async def round_world(
    chain: BlockHashes,
    index: SearchIndex,
    config: WorldConfig,
    *,
    netuid: int,
    block: int,
    toolset: str,
    cache: Path,
    current: RoundWorld | None = None,
) -> RoundWorld | None:
    """The world of the latest world round seeded by ``block`` (``current`` again while it is the same).

    Returns None while no seed block exists yet (the chain is younger than the delay, or its
    node has not produced the seed block): the round is skipped, never run on a guessed world.

    Raises:
        ChainUnavailable: the seed block's hash could not be read.
        WorldError: the world could not be compiled or cached.
    """
    at = world_round_at(block, period=config.period_blocks, delay=config.delay_blocks)
    if at is None:
        logger.warning("world_unseeded block=%d delay=%d", block, config.delay_blocks)
        return None
    if current is not None and current.at == at:
        return current
    block_hash = await chain.block_hash(at.seed_block)
    if block_hash is None:
        logger.warning("world_unseeded block=%d seed_block=%d", block, at.seed_block)
        return None
    seed = round_seed(block_hash, netuid=netuid, round_index=at.index)
    started = time.monotonic()
    pack, source = await asyncio.to_thread(load_or_compile, index, seed, cache)
    seconds = time.monotonic() - started
    judging = WorldJudging.over(pack, index)
    world = RoundWorld(at, block_hash, judging, ToolContext(judging.overlay, toolset), source)
    metrics.WORLD_COMPILE_DURATION.labels(source).observe(seconds)
    metrics.WORLD_START_BLOCK.set(at.start_block)
    metrics.WORLD_INFO.clear()  # one series: the world served now
    metrics.WORLD_INFO.labels(world.world_id, world.pack_hash).set(1)
    logger.info(
        "world_ready world=%s round=%d seed_block=%d source=%s tasks=%d seconds=%.2f",
        world.world_id,
        at.index,
        at.seed_block,
        source,
        len(pack.tasks),
        seconds,
    )
    return world
