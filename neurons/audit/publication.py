"""A validator's publication of a revealed world round: a signed round document and one artifact per episode.

Layout under the publication root: ``<hotkey>/r<k>/round.json`` (``RoundPublication``, signed by
the validator's hotkey) and ``<hotkey>/r<k>/<episode id>.json`` (``storage.artifacts``: the
task with its gold, the episode, the trajectory, the tool server's log and the judgment, content
addressed and signed). A round is published only once the validator's reveal of its secret is on
chain (``publish_due``), so nothing private of a world leaves the validator before it is served
and revealed. Serve the root as static files, or hand it over: ``arena audit`` reads it.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field
from sqlalchemy.orm import Session, sessionmaker

from arena.errors import WorldError
from arena.types import Frozen, canonical_json
from arena.world.commitment import parse_commitment
from arena.world.pack import load_manifest
from arena.world.seed import WorldRound
from arena.world.types import PackManifest
from neurons.validator.roundsecrets import own_anchor
from neurons.validator.settings import ValidatorSettings
from neurons.validator.worlds import WorldChain
from storage import repository
from storage.artifacts import artifact, signed_payload

logger = logging.getLogger(__name__)

SCHEMA: Literal["arena.round-publication/1"] = "arena.round-publication/1"
ROUND_FILE = "round.json"


class RoundPublication(Frozen):
    """What a validator says it served in one world round, signed by its hotkey (``signature``)."""

    schema_id: Literal["arena.round-publication/1"] = Field(default=SCHEMA, alias="schema")
    validator: str
    netuid: int
    round: int
    period_blocks: int
    delay_blocks: int
    seed_block: int
    block_hash: str
    world_id: str
    pack_hash: str
    base_hash: str
    catalog_version: str
    toolset: str
    max_turns: int
    artifacts: dict[str, str]  # episode id -> artifact id, each in <episode id>.json
    signature: str = ""

    def document(self) -> dict[str, Any]:
        """The JSON document (``schema`` key, signature included)."""
        return self.model_dump(mode="json", by_alias=True)

    def payload(self) -> bytes:
        """The bytes the signature covers: the canonical document without its signature."""
        return signed_payload(self.document())


def round_directory(root: Path, validator: str, round_index: int) -> Path:
    """Where ``validator``'s publication of world round ``round_index`` lies under ``root``."""
    return root / validator / f"r{round_index}"


def read_publication(directory: Path) -> RoundPublication:
    """The round document in ``directory`` (its signature unchecked).

    Raises:
        FileNotFoundError: no round document there.
        ValueError: one that does not parse.
    """
    return RoundPublication.model_validate_json((directory / ROUND_FILE).read_bytes())


def read_artifact(directory: Path, episode_id: str) -> dict[str, Any]:
    """One episode's artifact document in ``directory``.

    Raises:
        FileNotFoundError: it is not there; ValueError: it is not a JSON object.
    """
    document = json.loads((directory / f"{episode_id}.json").read_bytes())
    if not isinstance(document, dict):
        raise ValueError(f"artifact {episode_id} is not a JSON object")
    return document


def _write(path: Path, data: bytes) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)


@dataclass(frozen=True)
class Publisher:
    """Publishes our revealed world rounds (the settings it needs, from ``ValidatorSettings``)."""

    root: Path  # the publication root
    cache: Path  # our world cache: the packs we served, one per round (``<hotkey>-r<k>``)
    hotkey: str
    netuid: int
    period_blocks: int
    delay_blocks: int
    toolset: str
    max_turns: int
    secrets_key: bytes  # to know our own anchor on chain (``neurons.validator.roundsecrets``)
    sign: Callable[[bytes], str]

    def served(self) -> Iterator[int]:
        """The world rounds whose pack we compiled (so may have served), oldest first."""
        prefix = f"{self.hotkey}-r"
        rounds = (path.name.removeprefix(prefix) for path in self.cache.glob(f"{prefix}*"))
        yield from sorted(int(r) for r in rounds if r.isdigit())

    async def publish_due(self, chain: WorldChain, sessions: sessionmaker[Session]) -> list[int]:
        """Publish every served round our reveal on chain covers and that is not published yet.

        Returns the rounds published now. A chain or a pack that cannot be read leaves the round
        for the next call.
        """
        head = await chain.commitment(self.hotkey)
        record = parse_commitment(head.text) if head is not None else None
        anchor = own_anchor(self.secrets_key, self.netuid, head)
        if record is None or anchor is None or record.revealed_round is None or not record.reveal_holds():
            return []
        published: list[int] = []
        for k in self.served():
            directory = round_directory(self.root, self.hotkey, k)
            if not anchor < k <= record.revealed_round or (directory / ROUND_FILE).is_file():
                continue
            at = WorldRound(k, k * self.period_blocks, k * self.period_blocks + self.delay_blocks)
            block_hash = await chain.block_hash(at.seed_block)
            if block_hash is None:
                continue
            try:
                manifest = load_manifest(self.cache / f"{self.hotkey}-r{k}")
            except WorldError as exc:
                logger.warning("round_unpublished round=%d error=%s", k, exc)
                continue
            with sessions() as session:
                count = self._publish(session, directory, at, block_hash, manifest)
            logger.info("round_published round=%d world=%s episodes=%d", k, manifest.world_id, count)
            published.append(k)
        return published

    def _publish(
        self, session: Session, directory: Path, at: WorldRound, block_hash: str, manifest: PackManifest
    ) -> int:
        directory.mkdir(parents=True, exist_ok=True)
        artifacts: dict[str, str] = {}
        episodes = [
            t.episode.episode_id for t in repository.judged_in_world(session, pack_hash=manifest.pack_hash)
        ]
        for episode_id in episodes:
            document = artifact(session, episode_id=episode_id, sign=self.sign, validator_hotkey=self.hotkey)
            _write(directory / f"{episode_id}.json", canonical_json(document).encode("utf-8"))
            artifacts[episode_id] = str(document["artifact_id"])
        publication = RoundPublication(
            validator=self.hotkey,
            netuid=self.netuid,
            round=at.index,
            period_blocks=self.period_blocks,
            delay_blocks=self.delay_blocks,
            seed_block=at.seed_block,
            block_hash=block_hash,
            world_id=manifest.world_id,
            pack_hash=manifest.pack_hash,
            base_hash=manifest.base_hash,
            catalog_version=manifest.catalog_version,
            toolset=self.toolset,
            max_turns=self.max_turns,
            artifacts=artifacts,
        )
        signed = publication.model_copy(update={"signature": self.sign(publication.payload())})
        _write(directory / ROUND_FILE, canonical_json(signed.document()).encode("utf-8"))  # last: whole
        return len(artifacts)


def publisher_for(
    settings: ValidatorSettings, hotkey: str, secrets_key: bytes, sign: Callable[[bytes], str]
) -> Publisher:
    """The validator's publisher, from its settings: ``world.publish_dir`` and the world clock."""
    return Publisher(
        root=settings.publish_path(),
        cache=settings.world_cache_path(),
        hotkey=hotkey,
        netuid=settings.netuid,
        period_blocks=settings.world.period_blocks,
        delay_blocks=settings.world.delay_blocks,
        toolset=settings.toolset,
        max_turns=settings.round.max_turns,
        secrets_key=secrets_key,
        sign=sign,
    )
