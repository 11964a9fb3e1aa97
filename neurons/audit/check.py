"""``audit_round``: a validator's world round checked by anyone, from the chain and its publication.

1. The chain: the validator's commitment as it stood the block before the round's seed block
   must hold its anchor (committed before the seed), and its commitment now must reveal the
   round's secret, hashing down to that anchor. No reveal is a flag (``not_revealed``).
2. The world: the round seed from the final seed block's hash and the secret, the pack compiled
   over the base index the auditor holds; the publication must name that pack.
3. The publication: signed by the validator; every artifact signed and content-addressed, of the
   round's world, its task one of the pack's, the tasks served the first in the pack's public
   draw order, and each judgment re-derived from its log (``neurons.audit.rejudge``).

Every difference is reported (``Difference``); nothing stops at the first.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import ValidationError

from arena.index import SearchIndex
from arena.world.commitment import Commitment, parse_commitment
from arena.world.compile import compile_world
from arena.world.seed import WorldRound, base_hash, round_seed
from arena.world.types import WorldPack
from judging.world import WorldJudging
from neurons.audit.publication import RoundPublication, read_artifact, read_publication, round_directory
from neurons.audit.rejudge import PublishedEpisode, rejudge, verdict
from neurons.chain.chaintypes import ChainCommitment
from neurons.validator.taskpool import world_draw_order
from storage.artifacts import verify_artifact

logger = logging.getLogger(__name__)

Kind = Literal[
    "not_committed",  # no anchor on chain before the seed block
    "not_revealed",  # the round's secret is not revealed on chain (or under another anchor)
    "bad_reveal",  # a reveal that does not hash down to the anchor
    "unseeded",  # the seed block is not final
    "no_publication",  # nothing published for the round
    "bad_signature",  # the round document is not signed by the validator
    "publication",  # the round document names another world, block, clock or base
    "artifact",  # an artifact missing, unsigned, mis-addressed or of another world
    "task",  # a task the world does not hold
    "task_order",  # tasks served out of the public draw order
    "judgment",  # a judgment the auditor does not re-derive
]
Verify = Callable[[bytes, str, str], bool]


class AuditChain(Protocol):
    """What an audit reads from the chain (``neurons.chain.client.open_reader``)."""

    async def commitment(self, hotkey: str, *, block: int | None = None) -> ChainCommitment | None:
        """A hotkey's commitment at ``block`` (None: the head)."""
        ...

    async def block_hash(self, block: int) -> str | None:
        """The hash of a final block (None: not final)."""
        ...


@dataclass(frozen=True)
class Difference:
    """One thing the audit found different from what the validator should have done."""

    kind: Kind
    detail: str
    episode_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON-able."""
        return {"kind": self.kind, "detail": self.detail, "episode_id": self.episode_id}


@dataclass
class AuditReport:
    """What one audit found: the world recompiled, the episodes re-judged, every difference."""

    validator: str
    round: int
    seed_block: int
    revealed: bool = False
    world_id: str | None = None
    pack_hash: str | None = None
    episodes: int = 0
    rejudged: int = 0
    tasks: int = 0
    differences: list[Difference] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No difference found."""
        return not self.differences

    def flag(self, kind: Kind, detail: str, episode_id: str | None = None) -> None:
        """Record a difference."""
        self.differences.append(Difference(kind, detail, episode_id))

    def to_json(self) -> dict[str, Any]:
        """The report as ``arena audit --json`` prints it."""
        return {
            "validator": self.validator,
            "round": self.round,
            "seed_block": self.seed_block,
            "ok": self.ok,
            "revealed": self.revealed,
            "world_id": self.world_id,
            "pack_hash": self.pack_hash,
            "episodes": self.episodes,
            "rejudged": self.rejudged,
            "tasks": self.tasks,
            "differences": [d.to_json() for d in self.differences],
        }


async def revealed_secret(
    chain: AuditChain, validator: str, at: WorldRound, report: AuditReport
) -> bytes | None:
    """The round's secret as the chain proves it (step 1 of the module docstring); flags what fails."""
    before = await chain.commitment(validator, block=at.seed_block - 1)
    anchored = parse_commitment(before.text) if before is not None else None
    if anchored is None or anchored.anchor_round >= at.index:
        report.flag(
            "not_committed", f"no anchor below round {at.index} on chain at block {at.seed_block - 1}"
        )
        return None
    now = await chain.commitment(validator)
    record = parse_commitment(now.text) if now is not None else None
    if record is None or record.revealed_round is None or record.revealed_round < at.index:
        report.flag("not_revealed", f"the commitment on chain reveals no secret of round {at.index}")
        return None
    if (record.anchor_round, record.anchor) != (anchored.anchor_round, anchored.anchor):
        report.flag("not_revealed", "the reveal on chain is under another anchor than the one committed")
        return None
    proof = Commitment(anchored.anchor_round, anchored.anchor, record.revealed_round, record.revealed)
    secret = proof.secret(at.index)
    if secret is None:
        report.flag(
            "bad_reveal", f"the secret revealed for round {record.revealed_round} does not hash to the anchor"
        )
        return None
    report.revealed = True
    return secret


async def audit_round(
    chain: AuditChain,
    base: SearchIndex,
    *,
    validator: str,
    netuid: int,
    round_index: int,
    period_blocks: int,
    delay_blocks: int,
    published: Path,
    verify: Verify,
) -> AuditReport:
    """Audit ``validator``'s world round ``round_index`` (the module docstring); ``published`` is the root."""
    at = WorldRound(round_index, round_index * period_blocks, round_index * period_blocks + delay_blocks)
    report = AuditReport(validator=validator, round=round_index, seed_block=at.seed_block)
    secret = await revealed_secret(chain, validator, at, report)
    block_hash = await chain.block_hash(at.seed_block)
    if block_hash is None:
        report.flag("unseeded", f"block {at.seed_block} is not final")
    pack: WorldPack | None = None
    if secret is not None and block_hash is not None:
        seed = round_seed(block_hash, netuid=netuid, round_index=round_index, secret=secret)
        pack = await asyncio.to_thread(compile_world, seed, base)
        report.world_id, report.pack_hash = pack.manifest.world_id, pack.manifest.pack_hash
    directory = round_directory(published, validator, round_index)
    try:
        publication = read_publication(directory)
    except (OSError, ValueError) as exc:
        report.flag("no_publication", f"no round document in {directory}: {exc}")
        return report
    if not verify(publication.payload(), publication.signature, validator):
        report.flag("bad_signature", "the round document is not signed by the validator's hotkey")
        return report
    _check_document(publication, report, at, block_hash, base_hash(base), netuid)
    if pack is not None:
        _check_episodes(publication, directory, pack, base, report, verify)
    return report


def _check_document(
    doc: RoundPublication, report: AuditReport, at: WorldRound, block_hash: str | None, base: str, netuid: int
) -> None:
    expected = {
        "validator": report.validator,
        "netuid": netuid,
        "round": at.index,
        "seed_block": at.seed_block,
        "block_hash": block_hash,
        "base_hash": base,
        "pack_hash": report.pack_hash,
        "world_id": report.world_id,
    }
    for name, value in expected.items():
        if value is not None and getattr(doc, name) != value:
            report.flag("publication", f"{name} is {getattr(doc, name)!r}, the chain gives {value!r}")


def _check_episodes(
    doc: RoundPublication,
    directory: Path,
    pack: WorldPack,
    base: SearchIndex,
    report: AuditReport,
    verify: Verify,
) -> None:
    episodes: list[PublishedEpisode] = []
    for episode_id, artifact_id in sorted(doc.artifacts.items()):
        try:
            document = read_artifact(directory, episode_id)
            if not verify_artifact(document, verify=verify) or document.get("artifact_id") != artifact_id:
                report.flag("artifact", "not signed by the validator, or not the artifact named", episode_id)
                continue
            episode = PublishedEpisode(document)
        except (OSError, ValueError, KeyError, ValidationError) as exc:
            report.flag("artifact", f"unreadable: {exc}", episode_id)
            continue
        if (episode.episode.get("world_id"), episode.episode.get("pack_hash")) != (
            pack.manifest.world_id,
            pack.manifest.pack_hash,
        ):
            report.flag("artifact", "the episode names another world", episode_id)
            continue
        episodes.append(episode)
    report.episodes = len(episodes)
    tasks = {compiled.task.task_id: compiled.task for compiled in pack.tasks}
    served = {e.task.task_id for e in episodes}
    report.tasks = len(served)
    for episode in episodes:
        if (
            episode.task.task_id not in tasks
            or episode.task.definition() != tasks[episode.task.task_id].definition()
        ):
            report.flag("task", f"task {episode.task.task_id} is not one of the world's", episode.episode_id)
    order = [t.task_id for t in world_draw_order(pack.manifest.pack_hash, list(tasks.values()))]
    if served and set(order[: len(served)]) != served:
        report.flag(
            "task_order", f"the {len(served)} tasks served are not the first of the world's draw order"
        )
    world = WorldJudging.over(pack, base)
    for episode in episodes:
        if episode.task.task_id not in tasks:
            continue
        try:
            again = rejudge(episode, world, toolset=doc.toolset, max_turns=doc.max_turns)
        except ValueError as exc:
            report.flag("judgment", str(exc), episode.episode_id)
            continue
        report.rejudged += 1
        want, got = verdict(again), verdict(episode.judgment)
        differs = sorted(name for name in want if want[name] != got[name])
        if differs:
            detail = "; ".join(
                f"{name}: published {got[name]!r}, re-judged {want[name]!r}" for name in differs
            )
            report.flag("judgment", detail, episode.episode_id)
