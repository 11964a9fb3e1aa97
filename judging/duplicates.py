"""Identical work in one round is credited once: the first to arrive keeps its score, copies score 0.

Two hotkeys running one deterministic agent do the same work on the same task; crediting both
would pay a miner for registering copies of itself. The work is the task and the trajectory's
tool calls in order, each as its tool name and canonical arguments (the form the tool server
logs), with text folded (case, runs of whitespace) so that spacing does not make new work; the
answer is the final ``recommend_product`` call, so it is part of the sequence. The reasoning
text is not: it varies between runs of one model and costs a copier nothing to vary.

First credited, not a split: each episode is judged and stored once, as its reply arrives (a
crash loses nothing and nothing stored is rewritten), and N copies still earn one episode's
credit between them, whichever is faster. Only a copy that scores above 0 claims the work, and
only once it is stored so (``FirstArrivals``): a copy that is zero anyway (a reject, text that
cannot be stored) cannot take the credit from the original by racing it with junk. A later
copy keeps its judgment for curation, zeroed with the ``duplicate_work`` reject and a
``duplicate`` check naming the episode it copies.
"""

from __future__ import annotations

import asyncio
from typing import Any

from arena.tools import canonical_arguments
from arena.types import Trajectory, content_hash
from judging.types import Check, DuplicateEvidence, Judgment


def _folded(value: Any) -> Any:
    if isinstance(value, str):
        return " ".join(value.casefold().split())
    if isinstance(value, dict):
        return {key: _folded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_folded(item) for item in value]
    return value


def work_hash(task_id: str, trajectory: Trajectory) -> str | None:
    """The address of the work a trajectory did on a task; None when it called no tool (no work)."""
    calls = [call for message in trajectory.messages for call in message.tool_calls or ()]
    if not calls:
        return None
    sequence = [
        [
            c.function.name,
            _folded(canonical_arguments(c.function.name, c.function.parsed, raw=c.function.arguments)),
        ]
        for c in calls
    ]
    return content_hash({"task_id": task_id, "calls": sequence}, prefix="w-")


class FirstArrivals:
    """The work credited so far in one round, each with the episode credited for it.

    A claim is provisional until the claimant's episode is stored (``settle``): a copy that
    comes while the first is being stored waits for the outcome, and if the first could not be
    kept as credited (stored as a miner fault instead), the work is free again for the copy.
    """

    def __init__(self) -> None:
        self._first: dict[str, tuple[str, asyncio.Future[bool]]] = {}

    async def claim(self, work: str, episode_id: str) -> str | None:
        """Claim ``work`` for ``episode_id``: None if credited (``settle`` it then), else the first's id."""
        while True:
            held = self._first.get(work)
            if held is None:
                self._first[work] = (episode_id, asyncio.get_running_loop().create_future())
                return None
            first, settled = held
            if first == episode_id:
                return None
            if await asyncio.shield(settled):
                return first

    def settle(self, work: str, episode_id: str, *, credited: bool) -> None:
        """Say whether the claimant's episode was stored credited; if not, the work is free again."""
        held = self._first.get(work)
        if held is None or held[0] != episode_id or held[1].done():
            return
        held[1].set_result(credited)
        if not credited:
            del self._first[work]


def credited_once(judgment: Judgment, *, work: str, first_episode_id: str) -> Judgment:
    """The judgment of a copy: score 0, a ``duplicate`` check naming the original (so ``duplicate_work``)."""
    flag = Check(
        name="duplicate",
        value=0.0,
        explanation=f"the same calls and answer as episode {first_episode_id}, which arrived first: "
        "identical work in a round is credited once",
        evidence=DuplicateEvidence(work_hash=work, first_episode_id=first_episode_id),
    )
    return judgment.revised(score=0.0, checks=(*judgment.checks, flag))
