"""Storage's own vocabulary (beyond arena.types and judging.types): what the repository takes and returns."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, model_validator

from arena.types import EpisodeEnd, Frozen, Task, ToolLogEntry, Trajectory
from judging.types import Axis, Judgment


class EpisodeRecord(Frozen):
    """One (miner, task) episode as the validator ran it; the trajectory is stored beside it.

    ``round_id`` is None for episodes outside a validator round (offline judging);
    ``miner_uid`` is None where the miner has no uid (practice, offline). ``world_id`` and
    ``pack_hash`` name the world pack the episode ran on (``arena.world``); both are None for
    static (``sb-1``) tasks, and one is never set without the other.
    """

    episode_id: str = Field(min_length=1, max_length=64)
    round_id: int | None = None
    task_id: str = Field(min_length=1, max_length=64)
    miner_hotkey: str = Field(min_length=1, max_length=64)
    miner_uid: int | None = None
    validator_hotkey: str = Field(min_length=1, max_length=64)
    started_at: datetime
    finished_at: datetime
    end: EpisodeEnd
    world_id: str | None = Field(default=None, min_length=1, max_length=64)
    pack_hash: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")

    @model_validator(mode="after")
    def _world_is_whole(self) -> EpisodeRecord:
        if (self.world_id is None) != (self.pack_hash is None):
            raise ValueError("an episode's world_id and pack_hash are set together or not at all")
        return self


class JudgedTrace(Frozen):
    """One stored, judged episode with everything curation needs, in ingest order (``seq``)."""

    seq: int
    stored_at: datetime
    episode: EpisodeRecord
    task: Task
    trajectory: Trajectory | None
    tool_log: tuple[ToolLogEntry, ...]
    judgment: Judgment


class ScoredEpisode(Frozen):
    """A judged episode reduced to what a scores window needs (no trajectory, no checks)."""

    seq: int
    episode_id: str
    task_id: str
    round_id: int | None
    miner_hotkey: str
    miner_uid: int | None
    finished_at: datetime
    end: EpisodeEnd
    score: float
    success: bool
    axis: Axis


class RoundRecord(Frozen):
    """A validator round: when, at which block, which tasks; ``closed_at`` None while it runs."""

    round_id: int = Field(ge=0)
    validator_hotkey: str = Field(min_length=1, max_length=64)
    started_at: datetime
    block: int | None = None
    task_ids: tuple[str, ...] = ()
    closed_at: datetime | None = None
    stats: dict[str, Any] | None = None


class ScoreRecord(Frozen):
    """A hotkey's windowed standing (``judging.scores.MinerStanding``) at one block."""

    hotkey: str
    uid: int | None
    n: int = Field(ge=0)
    mean: float
    lower: float
    block: int
    at: datetime


RevealStatus = Literal["pending", "revealed", "missing", "superseded", "unconfirmed"]
REVEAL_STATUSES: tuple[RevealStatus, ...] = ("pending", "revealed", "missing", "superseded", "unconfirmed")


class WeightRecord(Frozen):
    """One set_weights attempt: the vector (uids, weights), the block, and the chain's answer.

    On a commit-reveal subnet the attempt is a timelocked commit: ``reveal_round`` is its drand
    round and ``reveal_status`` what the check after that round found (``pending`` until then;
    ``revealed``: the weights are on chain; ``missing``: they are not; ``superseded``: a newer
    commit's reveal replaced them before a check could read them), checked at ``reveal_block``.
    Both are None for plain weights. ``unconfirmed`` (on either kind of subnet) marks an attempt
    whose submit timed out: ``success`` False and no block until a later pass finds it on chain
    (``confirm_submission``).
    """

    uids: tuple[int, ...]
    weights: tuple[float, ...]
    block: int | None = None
    success: bool
    message: str = ""
    version_key: int = 0
    at: datetime
    reveal_round: int | None = None
    reveal_status: RevealStatus | None = None
    reveal_block: int | None = None

    @model_validator(mode="after")
    def _vector_is_sane(self) -> WeightRecord:
        if len(self.uids) != len(self.weights):
            raise ValueError(f"{len(self.uids)} uids but {len(self.weights)} weights")
        if any(not math.isfinite(w) or w < 0 for w in self.weights):
            raise ValueError("weights must be finite and non-negative")
        return self
