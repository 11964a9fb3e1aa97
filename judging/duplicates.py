"""The same work on a task, known by its effect, and how hotkeys that copy one another share its credit.

**The work** (``work_hash``) is what an episode's calls did, read from the validator's own tool
log: the set of results its successful calls returned (a search's hits, a product's details, a
shopper's answer), and the answer it recommended, on its task. A copy that rewords a query and
gets the same hits (`` " ."`` appended), reorders its calls, repeats one or adds a failing one has
done the same work; the reasoning text and the arguments' spelling are not part of it.

**The credit** (``shared_by``): independent agents converge on tasks with one obvious path, so
the same work alone does not make a copy; a pair of hotkeys that brought the same work on more
than ``copy_share`` of the tasks both scored on does (a copy matches its original on about every
task, independent agents on the obvious ones). On each piece of work, the hotkeys linked so
(transitively) share one credit equally; every other hotkey that brought it keeps its own. So N
copies of one agent earn one hotkey's credit between them, however many, and cannot dilute an
independent miner that took the same path; two independent miners both keep theirs.

The trade-off: a pair that converges on more than ``copy_share`` of its tasks shares on those
(simple task mixes make that likelier), and a copier that varies what it learns (one extra search
with other hits on every task) is other work by this rule. Nothing in a trajectory's content
separates that copier from an independent agent without also sharing honest agents' credit on
every task they solve alike; the score does not depend on the extra call, so it costs the copier
one call of its budget. Stored judgments are never rewritten: the sharing is applied where the
weights read the scores (``judging.scores.standings``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from itertools import combinations
from typing import Protocol

from arena.tools import ToolKind, tool_kind
from arena.types import ToolLogEntry, Trajectory, content_hash
from judging.answer import final_answer

# What these calls return is not something learned: the answer is read from the trajectory's
# final answer (as the judge reads it), and ending says nothing.
_NOT_LEARNED: frozenset[ToolKind | None] = frozenset({"answer", "end"})


def work_hash(task_id: str, trajectory: Trajectory, log: Sequence[ToolLogEntry]) -> str | None:
    """The address of the work an episode did on a task; None when it learned and answered nothing."""
    learned = sorted(
        {(e.tool, e.result_hash) for e in log if e.status == "ok" and tool_kind(e.tool) not in _NOT_LEARNED}
    )
    calls = [call for message in trajectory.messages for call in message.tool_calls or ()]
    answer = final_answer(calls).product_ids
    if not learned and not answer:
        return None
    return content_hash(
        {"task_id": task_id, "learned": [list(pair) for pair in learned], "answer": list(answer)},
        prefix="w-",
    )


class Claim(Protocol):
    """A scored episode as the credit rule reads it (``judging.scores.ScoreSample`` is one)."""

    @property
    def hotkey(self) -> str:
        """Who brought the work."""
        ...

    @property
    def task_id(self) -> str | None:
        """The task it was done on."""
        ...

    @property
    def work(self) -> str | None:
        """Its ``work_hash`` (None: no work, or stored before work was recorded)."""
        ...


def shared_by(claims: Sequence[Claim], *, copy_share: float) -> list[int]:
    """For each claim (an episode that scored above 0), how many share its credit; 1 is its own.

    Args:
        claims: every scoring episode the weights read, in any order.
        copy_share: a pair of hotkeys is linked when the same work makes up more than this share
            of the tasks both scored on (``judging.scores.ScorePolicy.copy_share``).
    """
    tasks: dict[str, dict[str, str]] = defaultdict(dict)  # hotkey -> task -> work
    groups: dict[str, list[int]] = defaultdict(list)  # work -> claims that brought it
    for i, claim in enumerate(claims):
        if claim.work is not None and claim.task_id is not None:
            tasks[claim.hotkey][claim.task_id] = claim.work
            groups[claim.work].append(i)
    linked: dict[frozenset[str], bool] = {}

    def is_linked(a: str, b: str) -> bool:
        key = frozenset((a, b))
        if key not in linked:
            both = tasks[a].keys() & tasks[b].keys()
            same = sum(1 for task in both if tasks[a][task] == tasks[b][task])
            linked[key] = same > copy_share * len(both)
        return linked[key]

    divisors = [1] * len(claims)
    for members in groups.values():
        cluster = _clusters(sorted({claims[i].hotkey for i in members}), is_linked)
        size = Counter(cluster[claims[i].hotkey] for i in members)
        for i in members:
            divisors[i] = size[cluster[claims[i].hotkey]]
    return divisors


def _clusters(hotkeys: Sequence[str], is_linked: Callable[[str, str], bool]) -> dict[str, str]:
    """Each hotkey's cluster (named by one member) under the links among them, taken transitively."""
    root = {h: h for h in hotkeys}

    def find(h: str) -> str:
        while root[h] != h:
            h = root[h]
        return h

    for a, b in combinations(hotkeys, 2):
        if is_linked(a, b):
            root[find(a)] = find(b)
    return {h: find(h) for h in hotkeys}
