"""One trace's rationales: each step written against the facts before it, verified, rewritten if refused.

The converted trajectory has one assistant turn per kept call, in log order: its
``reasoning_content`` is the writer's rationale, its ``content`` empty (the harness's own
narration is dropped), its one tool call the logged call (canonical arguments), and the tool
message after it the logged result, byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from arena.tools import tool_kind
from arena.types import FunctionCall, Message, Product, Task, ToolCall, ToolLogEntry, Trajectory
from arena.wording import tokens
from curation.conversion.facts import FactTable, Item, TaskFacts, call_text
from curation.conversion.step import RationaleWriter, Step, step_seed
from curation.conversion.verify import unsupported
from judging.axis import classify_steps
from judging.context import ProductLookup


def memoised(lookup: ProductLookup) -> ProductLookup:
    """A catalog lookup that asks the index once per id (one trace's steps and judge share it)."""
    cache: dict[str, Product | None] = {}

    def products(ids: Sequence[str]) -> Mapping[str, Product]:
        missing = [i for i in ids if i not in cache]
        if missing:
            found = lookup(missing)
            cache.update({i: found.get(i) for i in missing})
        return {i: p for i in ids if (p := cache[i]) is not None}

    return products


def item_words(item: Item) -> set[str]:
    """The words a search for ``item`` would use: the user's words for it and its constraint values."""
    return set(tokens(" ".join([*item.words, *(v for c in item.constraints for v in c.values)])))


def item_for(
    entry: ToolLogEntry, facts: FactTable, words: dict[int, tuple[Item, set[str]]] | None = None
) -> Item | None:
    """The item a search serves: the one sharing most words with its query (an unsearched one on a tie).

    ``words`` keeps each item's :func:`item_words` across one trace's steps (by the item object).
    """
    items = facts.task.items
    if tool_kind(entry.tool) != "search" or not items:
        return None
    q = set(tokens(str(entry.arguments.get("q") or "")))
    searched = {s.item for s in facts.searches}
    known = {} if words is None else words

    def score(item: Item) -> tuple[int, bool, int]:
        kept = known.get(id(item))
        if kept is None or kept[0] is not item:  # the item object is kept too: its id is not reused
            kept = known[id(item)] = (item, item_words(item))
        return (len(q & kept[1]), item.position not in searched, -item.position)

    return max(items, key=score)


def assemble(
    trajectory: Trajectory,
    task: Task,
    kept: Sequence[ToolLogEntry],
    rationales: Sequence[str],
    texts: Sequence[str] | None = None,
) -> Trajectory:
    """The converted trajectory: the source's system message, the task's query, one turn per kept call.

    ``texts``: each kept call's :func:`call_text`, where the caller has them already.
    """
    messages = [m for m in trajectory.messages[:1] if m.role == "system"]
    messages.append(Message(role="user", content=task.query))
    texts = texts if texts is not None else [call_text(entry) for entry in kept]
    for entry, rationale, arguments in zip(kept, rationales, texts, strict=True):
        call_id = entry.call_id or f"call_{entry.seq}"
        call = ToolCall(id=call_id, function=FunctionCall(name=entry.tool, arguments=arguments))
        messages.append(
            Message(role="assistant", content=None, reasoning_content=rationale, tool_calls=(call,))
        )
        messages.append(Message(role="tool", tool_call_id=call_id, content=entry.result))
    return Trajectory(
        task_id=task.task_id,
        episode_id=trajectory.episode_id,
        miner_hotkey=trajectory.miner_hotkey,
        messages=tuple(messages),
    )


class TraceWriter:
    """The rationales of one trace as they are written, and how many had to be written again."""

    def __init__(
        self,
        task: Task,
        source: Trajectory,
        kept: Sequence[ToolLogEntry],
        facts: TaskFacts,
        seed: str,
        writer: RationaleWriter,
        products: ProductLookup,
        attempts: int,
    ) -> None:
        self.task, self.source, self.kept, self.facts = task, source, kept, facts
        self.seed, self.writer, self.products, self.attempts = seed, writer, products, attempts
        self.rationales: dict[int, str] = {}
        self.rewrites = 0
        self._item_words: dict[int, tuple[Item, set[str]]] = {}  # item_for's, for this trace only
        self._texts = [call_text(entry) for entry in kept]  # each call's arguments, written once

    async def _one(self, step: Step, offset: int) -> str | None:
        """Write one step until the verifier accepts it (``attempts`` tries); None when it never does."""
        problems: list[str] = []
        for attempt in range(self.attempts):
            text = await self.writer.write(step, attempt=offset + attempt, problems=problems)
            found = unsupported(text, step, self.products)
            if not found:
                self.rationales[step.index] = text
                return None
            self.rewrites += 1
            problems = [str(p) for p in found]
        return f"{step.tool} at seq {step.entry.seq}: {problems[0]}"

    async def write(self, redo: set[int], offset: int) -> str | None:
        """Write the steps not written yet and those in ``redo``; the first refusal's detail, or None."""
        facts = FactTable(self.facts)
        for index, entry in enumerate(self.kept):
            facts.add_call(entry, self._texts[index])
            item = item_for(entry, facts, self._item_words)
            if index not in self.rationales or index in redo:
                step = Step(index, entry, item, facts, step_seed(self.seed, index))
                failure = await self._one(step, offset)
                if failure:
                    return failure
            facts.add_result(entry, item.position if item is not None else None)
        if redo:
            self.rewrites += len(redo)
        return None

    def trajectory(self) -> Trajectory:
        """The trajectory with the rationales written so far (every step has one after :meth:`write`)."""
        rationales = [self.rationales[i] for i in range(len(self.kept))]
        return assemble(self.source, self.task, self.kept, rationales, self._texts)

    def undriven(self, built: Trajectory) -> set[int]:
        """The kept calls the axis step classifier does not read as driven, where rewriting could help.

        A question to the shopper before any search is left out: the classifier reads a step as
        driven by its call's query words or ids, or by citing earlier results, and such a
        question has neither, however it is worded.
        """
        tools = [tool_kind(entry.tool) for entry in self.kept]
        calls = [index for index, tool in enumerate(tools) if tool != "end"]
        kinds = [step.kind for step in classify_steps(built)]
        first_search = next((i for i, tool in enumerate(tools) if tool == "search"), len(self.kept))
        return {
            index
            for index, kind in zip(calls, kinds, strict=False)
            if kind != "driven" and not (tools[index] == "ask" and index < first_search)
        }
