"""Judging a world episode: the task, the products, their stock and the shopper as they were at the answer.

A world may change during an episode (``arena.world.changes``); each logged result records the
world version it came from. The outcome is judged against the world at the answer's version:
the task's ground truth there (``arena.world.changes.truth_at``), the products and their stock
as they were then (a pick that went out of stock before the answer fails), and the task's
hidden shopper where the tool set lets an agent ask. Grounding reconciles each cited price
against the version of the result that showed it (``judging.grounding``).

:class:`WorldJudging` is the one place that reads this off a pack: the validator's rounds,
``arena eval --world``, offline judging (``arena judge --world``, ``arena eval rejudge``) and
the axis-B converter all judge a world episode through it, so each gives the same Judgment.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from arena.errors import WorldError
from arena.index import SearchIndex
from arena.tools import offers, tool_kind
from arena.types import Product, Task, ToolLogEntry
from arena.world.changes import truth_at
from arena.world.overlay import WorldOverlay
from arena.world.pack import MANIFEST, load_manifest, load_pack
from arena.world.seed import base_hash
from arena.world.shopper import ShopperSession
from arena.world.types import ShopperProfile, WorldPack, WorldTask

logger = logging.getLogger(__name__)

# Catalog lookups: ids -> the products that exist (unknown ids absent); ids -> declared stock
# levels (a product without one is available).
ProductLookup = Callable[[Sequence[str]], Mapping[str, Product]]
StockLookup = Callable[[Sequence[str]], Mapping[str, int]]


def answer_version(log: Sequence[ToolLogEntry]) -> int:
    """The world version at the answer: the last successful answer call's (``recommend_product``).

    Else the last call's; 0 with no call or no version.
    """
    ordered = sorted(log, key=lambda e: e.seq)
    answers = [e for e in ordered if tool_kind(e.tool) == "answer" and e.status == "ok"]
    last = answers[-1] if answers else (ordered[-1] if ordered else None)
    return (last.world_version or 0) if last is not None else 0


@dataclass(frozen=True)
class AtAnswer:
    """What an answer is judged against (``judging.judge.judge``'s ``against``).

    ``AtAnswer(lookup)`` is a static catalog: no world, so no other truth, no stock, no shopper.

    Attributes:
        products: the product lookup (a world's: at the answer's version).
        truth: the task as judged at the answer's version (None: its own gold holds).
        stock: the stock lookup at that version (None: stock is not judged, a static catalog).
        profile: the task's hidden shopper, where the tool set offers ``ask_user`` (else None:
            an agent that cannot ask is never scored on questions it could not put).
    """

    products: ProductLookup
    truth: Task | None = None
    stock: StockLookup | None = None
    profile: ShopperProfile | None = None


def judged_at_answer(
    task: WorldTask | None,
    world: WorldOverlay,
    log: Sequence[ToolLogEntry],
    *,
    profile: ShopperProfile | None = None,
) -> AtAnswer:
    """The truth, products and stock at the answer's version (``task`` None: not a task of the pack)."""
    at = world.at_version(answer_version(log))
    truth = truth_at(task, at.version) if task is not None else None
    return AtAnswer(truth=truth, products=at.products, stock=at.stock_levels, profile=profile)


@dataclass(frozen=True)
class WorldJudging:
    """A world pack applied over its base index: the tools' world and what its episodes are judged against."""

    pack: WorldPack
    overlay: WorldOverlay
    tasks: Mapping[str, WorldTask]

    @classmethod
    def over(cls, pack: WorldPack, base: SearchIndex) -> WorldJudging:
        """Apply ``pack`` over ``base``.

        Raises:
            WorldError: the pack was compiled over another base index, or its delta does not apply.
        """
        identity = base_hash(base)
        if identity != pack.manifest.base_hash:
            raise WorldError(
                f"world {pack.manifest.world_id} was compiled over base {pack.manifest.base_hash[:16]}, "
                f"not this index ({identity[:16]})"
            )
        return cls(
            pack=pack,
            overlay=WorldOverlay(base, pack.delta),
            tasks={world_task.task.task_id: world_task for world_task in pack.tasks},
        )

    @property
    def world_id(self) -> str:
        """The pack's world id (``w-`` and 16 hex characters of the pack hash)."""
        return self.pack.manifest.world_id

    @property
    def pack_hash(self) -> str:
        """The pack hash: covers the seed, the base, the spec and every part."""
        return self.pack.manifest.pack_hash

    def profile(self, task_id: str, toolset: str) -> ShopperProfile | None:
        """The hidden shopper of one of the world's tasks, where ``toolset`` lets agents ask (else None)."""
        if not offers(toolset, "ask"):
            return None
        world_task = self.tasks.get(task_id)
        return world_task.profile if world_task is not None else None

    def shopper(self, task_id: str, toolset: str) -> ShopperSession | None:
        """A fresh simulated shopper for one episode of the task (None where it cannot ask)."""
        profile = self.profile(task_id, toolset)
        return ShopperSession(profile) if profile is not None else None

    def against(self, task: Task, log: Sequence[ToolLogEntry], toolset: str) -> AtAnswer:
        """What an episode of ``task`` (run with ``toolset``, logged as ``log``) is judged against."""
        return judged_at_answer(
            self.tasks.get(task.task_id), self.overlay, log, profile=self.profile(task.task_id, toolset)
        )


WorldLookup = Callable[[str], "WorldJudging | None"]
OPEN_WORLDS = 32  # worlds a lookup keeps applied (memory bounded by each delta)


def pack_directories(root: Path) -> list[Path]:
    """The pack directories at ``root``: itself where it holds a manifest, else its children that do."""
    if (root / MANIFEST).is_file():
        return [root]
    return sorted(path.parent for path in root.glob(f"*/{MANIFEST}"))


def world_lookup(root: Path, base: SearchIndex) -> WorldLookup:
    """Find a pack under ``root`` over ``base`` by pack hash, verified as it loads (None: not there).

    For judging a stored world episode offline (``arena judge --world``, ``arena eval rejudge``,
    the converter): ``root`` is one pack or a directory of packs (the validator's world cache).
    A pack over another base, or one that fails verification, is passed over with a warning.
    """
    identity = base_hash(base)
    opened: OrderedDict[str, WorldJudging] = OrderedDict()
    # Each manifest is read once per version of the file (its pack hash, or None: another base or
    # unreadable): a miss re-reads only manifests written since, so unknown worlds cost a listing.
    read: dict[Path, tuple[int, str | None]] = {}

    def holding(pack_hash: str) -> Iterator[Path]:
        for directory in pack_directories(root):
            try:
                written = (directory / MANIFEST).stat().st_mtime_ns
            except OSError:
                continue  # replaced while we looked: not a pack now
            if directory not in read or read[directory][0] != written:
                try:
                    manifest = load_manifest(directory)
                    found = manifest.pack_hash if manifest.base_hash == identity else None
                except WorldError as exc:
                    logger.warning("world_pack_refused dir=%s error=%s", directory, exc)
                    found = None
                read[directory] = (written, found)
            if read[directory][1] == pack_hash:
                yield directory

    def lookup(pack_hash: str) -> WorldJudging | None:
        if pack_hash in opened:
            opened.move_to_end(pack_hash)
            return opened[pack_hash]
        for directory in holding(pack_hash):
            try:
                world = WorldJudging.over(load_pack(directory), base)
            except WorldError as exc:
                logger.warning("world_pack_refused dir=%s error=%s", directory, exc)
                continue
            opened[pack_hash] = world
            while len(opened) > OPEN_WORLDS:
                opened.popitem(last=False)
            return world
        return None

    return lookup
