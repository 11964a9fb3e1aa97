"""SDK values as the node's chain types: metagraph snapshots, submissions, our sealed commits."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import bittensor as bt

from neurons.chain.chaintypes import MetagraphSnapshot, Neuron, SealedCommit, Submission
from neurons.chain.local.rules import RAO_PER_UNIT


def snapshot_of(graph: bt.Metagraph) -> MetagraphSnapshot:
    """The SDK's metagraph as a snapshot (stake in alpha, endpoints as ``http://ip:port``)."""
    neurons = tuple(
        Neuron(
            uid=n.uid,
            hotkey=n.hotkey,
            coldkey=n.coldkey,
            stake=n.total_stake.rao / RAO_PER_UNIT,
            validator_permit=n.validator_permit,
            endpoint=f"http://{n.axon}" if n.axon else None,
            last_update=n.last_update,
        )
        for n in graph.neurons
    )
    owner = graph.by_hotkey(graph.owner_hotkey)
    return MetagraphSnapshot(
        netuid=graph.netuid,
        block=graph.block,
        neurons=neurons,
        owner_hotkey=graph.owner_hotkey,
        owner_uid=owner.uid if owner is not None else None,
        taken_at=datetime.now(UTC),
    )


def error_code(error: BaseException | None) -> str:
    """The SDK error class of a failure (``rate_limited``, ``not_registered``...) or ``invalid_argument``."""
    code = getattr(error, "code", None)
    return str(code.value) if code is not None else "invalid_argument"


def submission_of(result: bt.ExtrinsicResult) -> Submission:
    """An extrinsic result as a submission (the block from its extrinsic id; None: not in a block)."""
    block = int(result.extrinsic_id.partition("-")[0]) if result.extrinsic_id else None
    code = None if result.success else error_code(result.error or bt.ChainError(result.message))
    return Submission(success=result.success, message=result.message, block=block, code=code)


def sealed_commits(commits: Iterable[tuple[Any, Any]], hotkey: str) -> tuple[SealedCommit, ...]:
    """``hotkey``'s commits in a decoded ``TimelockedWeightCommits`` (epoch -> [(who, block, _, round)])."""
    return tuple(
        SealedCommit(block=int(block), reveal_round=int(reveal_round))
        for _, entries in commits
        for signer, block, _ciphertext, reveal_round in entries or []
        if str(signer) == hotkey
    )
