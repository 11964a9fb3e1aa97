"""World rounds: the round's seed from a final block and our round secret, its pack compiled or loaded.

The seed of world round ``k`` is ``arena.world.seed.round_seed`` of the hash of the final block
``k * period + delay`` (``world_round_at``), the netuid, ``k`` and this validator's secret of round
``k`` (``neurons.validator.roundsecrets``): nobody can compile the world before we reveal the
secret, after the round, and anyone can then compile exactly what we served (``arena audit``).
Validators therefore run worlds of their own, drawn from one distribution. The pack is
``compile_world(seed, base)`` with the protocol's default ``WorldSpec``.

A compiled pack is kept per (validator, round), under ``<cache>/<hotkey>-r<k>``, with a seal:
an HMAC of its pack hash under a key derived from our secret. A restart, or a second round in the
same world, loads it (verified part by part, and sealed by us) instead of compiling it again; a
cached pack that fails verification, lacks our seal (a forged pack can be self-consistent) or
belongs to other inputs is compiled again over it.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from arena.errors import WorldError
from arena.index import SearchIndex
from arena.tools import ToolContext
from arena.types import Task, ToolLogEntry
from arena.world.compile import compile_world
from arena.world.overlay import WorldOverlay
from arena.world.pack import load_pack, save_pack
from arena.world.seed import WorldRound, base_hash, round_seed, world_round_at
from arena.world.shopper import ShopperSession
from arena.world.types import WorldPack, WorldSpec
from judging.world import AtAnswer, WorldJudging
from neurons import metrics
from neurons.validator.roundsecrets import CommitmentChain, round_secret
from neurons.validator.settings import WorldConfig

logger = logging.getLogger(__name__)

PackSource = Literal["compiled", "cached"]
SkipReason = Literal["unseeded", "uncommitted"]
SEAL = "seal"
_SEAL_LABEL = b"arena.world-seal/1"


class WorldChain(CommitmentChain, Protocol):
    """What world rounds need of the chain (``neurons.chain.client.BittensorChain``)."""

    async def block_hash(self, block: int) -> str | None:
        """The hash of ``block``, or None while it is not final."""
        ...


@dataclass(frozen=True)
class WorldKeys:
    """The validator's keys for world rounds, both derived from its secret (never printed)."""

    secrets: bytes = field(repr=False)  # keys the chain of round secrets
    seal: bytes = field(repr=False)  # seals the packs we compiled


@dataclass(frozen=True)
class WorldSkip:
    """Why a round runs on no world: its seed block is not final, or our secret was not on chain in time."""

    reason: SkipReason
    at: WorldRound | None = None


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


def pack_directory(cache: Path, validator: str, round_index: int) -> Path:
    """Where the pack of ``validator``'s world round ``round_index`` is kept."""
    return cache / f"{validator}-r{round_index}"


def seal_of(key: bytes, pack: WorldPack) -> str:
    """Our seal of a pack: HMAC-SHA256 of its pack hash (which covers its seed, base, spec and parts)."""
    return hmac.new(key, _SEAL_LABEL + pack.manifest.pack_hash.encode("ascii"), hashlib.sha256).hexdigest()


def _sealed(directory: Path, key: bytes, pack: WorldPack) -> bool:
    try:
        seal = (directory / SEAL).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return False
    return hmac.compare_digest(seal, seal_of(key, pack))


def load_or_compile(
    index: SearchIndex, seed: bytes, directory: Path, *, seal_key: bytes
) -> tuple[WorldPack, PackSource]:
    """The pack of ``seed`` over ``index``: loaded from ``directory`` when it is there, whole and ours.

    Blocking (compiling is CPU work): run it in a thread.

    Raises:
        WorldError: the world cannot be compiled (an empty base), or the cache cannot be written.
    """
    identity = base_hash(index)
    spec = WorldSpec()
    if (directory / "manifest.json").is_file():
        try:
            pack = load_pack(directory)
        except WorldError as exc:
            logger.warning("world_cache_refused dir=%s error=%s", directory, exc)
        else:
            manifest = pack.manifest
            if not _sealed(directory, seal_key, pack):
                logger.warning("world_cache_unsealed dir=%s world=%s", directory, manifest.world_id)
            elif manifest.seed_hex == seed.hex() and manifest.base_hash == identity and manifest.spec == spec:
                return pack, "cached"
            else:
                logger.warning("world_cache_mismatch dir=%s world=%s", directory, manifest.world_id)
    pack = compile_world(seed, index, spec)
    if directory.exists() and not (directory / "manifest.json").is_file():
        shutil.rmtree(directory)  # ours, left half-written by a crash: save_pack refuses such a directory
    (directory / SEAL).unlink(missing_ok=True)  # no seal until the new pack is whole
    save_pack(pack, directory)
    (directory / SEAL).write_text(seal_of(seal_key, pack) + "\n", encoding="ascii")
    return pack, "compiled"


async def round_world(
    chain: WorldChain,
    index: SearchIndex,
    config: WorldConfig,
    *,
    netuid: int,
    block: int,
    toolset: str,
    cache: Path,
    keys: WorldKeys,
    current: RoundWorld | None = None,
) -> RoundWorld | WorldSkip:
    """Our world of the latest world round seeded by ``block`` (``current`` again while it is the same).

    Skipped (never run on a guessed world) while the seed block is not final or not made yet,
    and while our secret of the round was not committed on chain before that block.

    Raises:
        ChainUnavailable: the seed block's hash or our commitment could not be read.
        WorldError: the world could not be compiled or cached.
    """
    at = world_round_at(block, period=config.period_blocks, delay=config.delay_blocks)
    if at is None:
        logger.warning("world_unseeded block=%d delay=%d", block, config.delay_blocks)
        return WorldSkip("unseeded")
    if current is not None and current.at == at:
        return current
    block_hash = await chain.block_hash(at.seed_block)
    if block_hash is None:
        logger.warning("world_unseeded block=%d seed_block=%d", block, at.seed_block)
        return WorldSkip("unseeded", at)
    secret = await round_secret(chain, keys.secrets, netuid, at)
    if secret is None:
        return WorldSkip("uncommitted", at)
    seed = round_seed(block_hash, netuid=netuid, round_index=at.index, secret=secret.secret)
    directory = pack_directory(cache, chain.hotkey, at.index)
    started = time.monotonic()
    pack, source = await asyncio.to_thread(load_or_compile, index, seed, directory, seal_key=keys.seal)
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
