"""The validator's round secrets on chain: anchor them before use, check before each world, reveal after.

The secrets are a hash chain (``arena.world.commitment``) keyed by a key derived from the
validator's one secret setting, so a restart derives the same chain. Entering world round ``k``
(``round_secret``), the validator:

1. reads its commitment at the head; one it cannot derive itself (none yet, another key, a
   chain used up) is replaced by a new anchor at ``k``, and world ``k`` is skipped: its seed
   block is already made, and a secret anchored after it could have been chosen to suit it;
2. reveals the secret of round ``k - 1`` where the record on chain reveals less: every episode of
   earlier rounds is over (rounds run one after another), and the reveal proves every earlier
   round's secret too, so a reveal that failed is made good by the next;
3. uses world ``k`` only if its commitment, as the chain held it the block before ``k``'s seed
   block, carries that anchor (the auditor's test, ``neurons.audit``), and returns its secret.

Nothing here logs a secret: only rounds, anchors' rounds and blocks.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Literal, Protocol

from arena.world.commitment import Commitment, SecretChain, parse_commitment
from arena.world.seed import WorldRound
from neurons.chain.chaintypes import ChainCommitment, Submission
from neurons.errors import ChainUnavailable

logger = logging.getLogger(__name__)

Posted = Literal["anchor", "reveal"]


class CommitmentChain(Protocol):
    """What round secrets need of the chain (``neurons.chain.client.BittensorChain``)."""

    @property
    def hotkey(self) -> str:
        """Our hotkey: the commitment is ours."""
        ...

    async def commitment(self, hotkey: str, *, block: int | None = None) -> ChainCommitment | None:
        """A hotkey's commitment at ``block`` (None: the head)."""
        ...

    async def set_commitment(self, text: str) -> Submission:
        """Publish our commitment."""
        ...


@dataclass(frozen=True)
class RoundSecret:
    """The secret of one world round and the anchor round of the chain it comes from."""

    round_index: int
    anchor_round: int
    secret: bytes = field(repr=False)


def own_anchor(key: bytes, netuid: int, record: ChainCommitment | None) -> int | None:
    """The anchor round of our chain in ``record`` (None: no record, or not one we can derive)."""
    parsed = parse_commitment(record.text) if record is not None else None
    if parsed is None:
        return None
    try:
        ours = SecretChain(key, netuid, parsed.anchor_round).anchor()
    except ValueError:
        return None
    return parsed.anchor_round if parsed.anchor == ours else None


async def round_secret(chain: CommitmentChain, key: bytes, netuid: int, at: WorldRound) -> RoundSecret | None:
    """The secret of world round ``at``, committing or revealing what is due first (the module docstring).

    Returns None when the round cannot be used: no anchor was on chain before its seed block.

    Raises:
        ChainUnavailable: a commitment could not be read, or a new anchor could not be sent.
    """
    head = await chain.commitment(chain.hotkey)
    anchor_round = own_anchor(key, netuid, head)
    if anchor_round is None or not SecretChain(key, netuid, anchor_round).covers(at.index):
        if anchor_round != at.index:
            await _post(chain, SecretChain(key, netuid, at.index).commitment(), "anchor")
        logger.warning("round_secret_unanchored round=%d anchor_round=%s", at.index, anchor_round)
        return None
    secrets = SecretChain(key, netuid, anchor_round)
    parsed = parse_commitment(head.text) if head is not None else None
    due = at.index - 1
    if due > anchor_round and parsed is not None and (parsed.revealed_round or anchor_round) < due:
        try:
            await _post(chain, secrets.commitment(revealed_round=due), "reveal")
        except ChainUnavailable as exc:  # the next world's reveal covers this one too
            logger.warning("round_secret_reveal_failed round=%d error=%s", due, exc)
    before = await chain.commitment(chain.hotkey, block=at.seed_block - 1)
    if own_anchor(key, netuid, before) != anchor_round:
        logger.warning(
            "round_secret_uncommitted round=%d seed_block=%d anchor_round=%d",
            at.index,
            at.seed_block,
            anchor_round,
        )
        return None
    return RoundSecret(at.index, anchor_round, secrets.secret(at.index))


async def _post(chain: CommitmentChain, record: Commitment, what: Posted) -> None:
    submission = await chain.set_commitment(record.text())
    if submission.success:
        logger.info(
            "round_secret_%s anchor_round=%d revealed_round=%s block=%s",
            what,
            record.anchor_round,
            record.revealed_round,
            submission.block,
        )
    else:
        logger.warning(
            "round_secret_%s_refused code=%s message=%s", what, submission.code, submission.message
        )
