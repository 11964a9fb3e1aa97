"""Re-judging a published episode from its log on the recompiled world, and what may differ.

The rule checks are re-run from the episode's tool log on the world the auditor compiled; the
reasoning check (an LLM's verdict, which cannot be asked again and be sure to answer the same)
is taken as published (``judging.judge.judge_with_reasoning``). Stored judgments are never
rewritten for copied work (its credit is shared where the weights read the scores,
``judging.duplicates``), so a published judgment is exactly what the rules and that check give.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from arena.types import EpisodeEnd, Task, ToolLogEntry, Trajectory
from judging.config import JudgeConfig
from judging.judge import judge_unanswered, judge_with_reasoning
from judging.types import Judgment
from judging.world import WorldJudging


class PublishedEpisode:
    """One artifact, parsed: the task, trajectory, tool log and judgment the validator published."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        """Parse an artifact document (``storage.artifacts``).

        Raises:
            ValueError: a part that does not parse (pydantic's ``ValidationError`` is one).
        """
        self.task = Task.model_validate(document["task"])
        wire = document.get("trajectory")
        self.trajectory = Trajectory.model_validate(wire) if wire is not None else None
        self.log = tuple(ToolLogEntry.model_validate(entry) for entry in document["tool_log"])
        self.judgment = Judgment.model_validate(document["judgment"])
        self.episode: dict[str, Any] = dict(document["episode"])

    @property
    def episode_id(self) -> str:
        """The episode's id."""
        return self.judgment.episode_id


def verdict(judgment: Judgment) -> dict[str, Any]:
    """What an audit compares of a judgment: everything scored, not the wording or the judge's name."""
    return {
        "score": judgment.score,
        "success": judgment.success,
        "end": judgment.end,
        "outcome": judgment.outcome.model_dump(mode="json"),
        "checks": [(check.name, check.value) for check in judgment.checks],
        "rejects": list(judgment.rejects),
        "axis": judgment.axis,
        "scorer": judgment.versions.scorer,
    }


def rejudge(episode: PublishedEpisode, world: WorldJudging, *, toolset: str, max_turns: int) -> Judgment:
    """The judgment the auditor derives for ``episode``.

    Raises:
        ValueError: the published judgment has no reasoning check to take.
    """
    versions = episode.judgment.versions
    config = JudgeConfig(toolset=toolset, max_turns=max_turns, catalog_version=versions.catalog_version)
    if episode.trajectory is None:
        return judge_unanswered(
            episode.task,
            episode_id=episode.episode_id,
            miner_hotkey=episode.judgment.miner_hotkey,
            end=cast(EpisodeEnd, episode.judgment.end),  # an EpisodeEnd, as it was stored
            config=config,
        )
    reasoning = episode.judgment.check("reasoning")
    if reasoning is None:
        raise ValueError(f"episode {episode.episode_id}: the published judgment has no reasoning check")
    against = world.against(episode.task, episode.log, toolset)
    return judge_with_reasoning(
        episode.task, episode.trajectory, log=episode.log, against=against, config=config, reasoning=reasoning
    )
