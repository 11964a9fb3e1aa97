"""Convert one judged trace: its validator tool log and its task become an agentic trajectory, re-judged.

:func:`convert` is the library function (curation's ``convert`` stage and ``arena convert`` call
it through :func:`convert_judged`). Given the task, the trajectory, the validator's tool log,
the source Judgment and the search index it returns a :class:`Converted` (the trajectory in
the same chat schema, its tool log, its re-judged Judgment, its provenance) or a
:class:`Dropped` with a typed reason, never an exception for bad input:

1. the inputs are checked (a trajectory, a task, a non-empty log whose results match their
   hashes, a known tool set, the index's catalog, a source neither rejected nor unanswered);
2. harness noise is pruned (:mod:`curation.conversion.pruning`); a pruned call list is replayed
   against the index and must return the logged bytes, else the unpruned log is used;
3. each kept call gets an assistant turn whose ``reasoning_content`` the writer wrote for it,
   verified against the facts before that call (:mod:`curation.conversion.verify`) and written
   again when refused (``attempts`` in all), and whose tool message is the logged result,
   byte for byte; steps the axis step classifier does not find driven are written again too;
4. the trajectory is re-judged from its (pruned) log with the rule checks; a failed check is
   the drop reason. If pruning is what made it fail, the unpruned trace is tried once more.

A world episode (its record names a pack hash) is replayed and re-judged on that world: the
converter's ``worlds`` finds the pack applied over the index (``judging.world.WorldJudging``);
a world it does not know is the drop ``unknown_world``, never a replay against the base
catalog's other prices. The re-judgment is the validator's: at the answer's world version
(its truth, prices and stock), and with the task's shopper profile where the tool set offers
``ask_user`` (the questions replay against it). A trace judged with a shopper check whose
profile the pack does not hold cannot be re-judged, and drops as ``unknown_world`` too.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from arena.index import SearchIndex
from arena.index_types import ProductIndex
from arena.tools import DEFAULT_TOOLSET, TOOLSETS, ToolContext, tool_kind
from arena.types import (
    Task,
    ToolLogEntry,
    Trajectory,
    content_hash,
    result_hash,
)
from arena.world.types import ShopperProfile
from curation.conversion.facts import TaskFacts
from curation.conversion.pruning import (
    Pruned,
    prune,
    questions_scored,
    replays_identically,
)
from curation.conversion.results import (
    CONVERTER_VERSION,
    Conversion,
    ConversionConfig,
    Converted,
    Dropped,
    Provenance,
)
from curation.conversion.step import RationaleWriter
from curation.conversion.task_facts import TaskFactsMemo
from curation.conversion.template import TemplateWriter
from curation.conversion.verify import judged_problem
from curation.conversion.writing import TraceWriter, memoised
from judging.judge import JudgeConfig, judge_rules
from judging.types import Judgment
from judging.world import AtAnswer, WorldJudging, WorldLookup
from storage.records import JudgedTrace

_T = TypeVar("_T")


@dataclass(frozen=True)
class Converter:
    """What a conversion run needs: the search index the traces were judged on, a writer, the settings.

    ``worlds`` finds a world pack applied over ``index`` by pack hash (``judging.world.world_lookup``;
    None: no world known, and world traces drop as ``unknown_world``). ``tasks`` reads each
    task's facts once for this converter's traces. ``spec``: how to open this converter again
    in a worker process (``curation.conversion.pool``; None: it cannot be, as with a teacher).
    """

    index: SearchIndex
    writer: RationaleWriter = field(default_factory=TemplateWriter)
    config: ConversionConfig = field(default_factory=ConversionConfig)
    worlds: WorldLookup | None = None
    tasks: TaskFactsMemo = field(default_factory=TaskFactsMemo, compare=False, repr=False)
    spec: ConverterSpec | None = None


@dataclass(frozen=True)
class ConverterSpec:
    """How to open a converter in another process: the index it replays on, the world packs, the settings."""

    index_dir: Path
    worlds_dir: Path | None = None
    config: ConversionConfig = field(default_factory=ConversionConfig)

    def open(self) -> Converter:
        """The converter (template writer) on a freshly opened index.

        Raises:
            SearchIndexError: the index cannot be opened.
        """
        from arena.index import open_index
        from judging.world import world_lookup

        index = open_index(self.index_dir)
        worlds = world_lookup(self.worlds_dir, index) if self.worlds_dir is not None else None
        return Converter(index=index, config=self.config, worlds=worlds, spec=self)


def source_hash(trajectory: Trajectory, log: Sequence[ToolLogEntry]) -> str:
    """The source trace's content hash: its trajectory (wire form) and tool log together."""
    return content_hash(
        {"trajectory": trajectory.to_wire(), "tool_log": [e.model_dump(mode="json") for e in log]},
        prefix="s-",
    )


def _inputs(
    task: Task | None,
    trajectory: Trajectory | None,
    log: Sequence[ToolLogEntry],
    source: Judgment,
    index: ProductIndex,
) -> Dropped | None:
    """Why the inputs cannot be converted, or None."""
    if trajectory is None:
        return Dropped("no_trajectory")
    if task is None:
        return Dropped("missing_task", trajectory.task_id)
    if not log:
        return Dropped("no_tool_log")
    bad = [e.seq for e in log if result_hash(e.result) != e.result_hash]
    if bad:
        return Dropped("log_hash_mismatch", f"seq {bad[0]}")
    ids = [e.call_id for e in log if e.call_id is not None]
    if len(ids) != len(set(ids)):
        return Dropped("duplicate_call_id")
    if (source.versions.toolset or DEFAULT_TOOLSET) not in TOOLSETS:
        return Dropped("unknown_toolset", str(source.versions.toolset))
    catalog = source.versions.catalog_version
    if catalog and catalog != index.catalog_version:
        return Dropped("catalog_mismatch", f"judged on {catalog}, index {index.catalog_version}")
    if source.rejects or source.fabricated or source.end != "completed":
        return Dropped("source_rejected", ",".join(source.rejects) or source.end)
    if not any(tool_kind(e.tool) == "answer" and e.status == "ok" for e in log):
        return Dropped("no_answer")
    return None


async def _attempt(
    task: Task,
    trajectory: Trajectory,
    kept: Sequence[ToolLogEntry],
    facts: TaskFacts,
    seed: str,
    converter: Converter,
    against: AtAnswer,
    judge_config: JudgeConfig,
) -> tuple[Trajectory, Judgment, int] | Dropped:
    """Write every step and re-judge; rewrite the steps the classifier reads as narrated, and judge again."""
    attempts = converter.config.attempts
    writing = TraceWriter(task, trajectory, kept, facts, seed, converter.writer, against.products, attempts)
    failure = await writing.write(set(), 0)
    if failure:
        return Dropped("ungrounded_rationale", failure)
    built = writing.trajectory()
    judgment = _rejudge(task, built, kept, against, judge_config)
    for rewrite_pass in range(1, attempts):
        axis = judgment.check("axis")
        redo = (
            writing.undriven(built)
            if axis is not None and axis.value is not None and axis.value < 1
            else set()
        )
        if not redo:
            break
        failure = await writing.write(redo, rewrite_pass * attempts)
        if failure:
            return Dropped("ungrounded_rationale", failure)
        built = writing.trajectory()
        judgment = _rejudge(task, built, kept, against, judge_config)
    return built, judgment, writing.rewrites


def _against(
    task: Task, kept: Sequence[ToolLogEntry], toolset: str, index: ProductIndex, world: WorldJudging | None
) -> AtAnswer:
    """What the converted trace is re-judged against: the world at its answer, or the static index."""
    at = world.against(task, kept, toolset) if world is not None else AtAnswer(index.products)
    return replace(at, products=memoised(at.products))


def _rejudge(
    task: Task, built: Trajectory, kept: Sequence[ToolLogEntry], against: AtAnswer, config: JudgeConfig
) -> Judgment:
    """The rule checks on the converted trace, against what the validator judged the source with."""
    return judge_rules(
        task,
        built,
        log=kept,
        against=against,
        config=config,
    )


def _explain(judgment: Judgment, problem: str) -> str:
    """The re-judged check that failed, in its own words."""
    names = {"format_failed": "format", "grounding_failed": "grounding", "not_driven": "axis"}
    check = judgment.check(names.get(problem, "outcome"))
    return check.explanation if check is not None else ""


def _pruned(
    log: Sequence[ToolLogEntry],
    config: ConversionConfig,
    ctx: ToolContext,
    source: Judgment,
    profile: ShopperProfile | None,
) -> tuple[Pruned, bool]:
    """The pruning decision, undone (second value True) when the kept calls replay to other bytes."""
    entries = tuple(sorted(log, key=lambda e: e.seq))
    if not config.prune:
        return Pruned(kept=entries), False
    decided = prune(entries, keep_questions=questions_scored(source))
    if decided.dropped and not replays_identically(decided.kept, ctx, profile, episode=entries):
        return Pruned(kept=entries), True
    return decided, False


async def convert(
    task: Task | None,
    trajectory: Trajectory | None,
    log: Sequence[ToolLogEntry],
    source: Judgment,
    *,
    converter: Converter,
    world: WorldJudging | None = None,
) -> Conversion:
    """Convert one judged trace (the module docstring has the steps); never raises for bad input.

    Args:
        task: the task the trace was judged against (None: ``missing_task``).
        trajectory: the miner's trajectory (None: ``no_trajectory``).
        log: the validator's tool log of the episode.
        source: the trace's Judgment (outcome and success must survive conversion).
        converter: the index, the writer and the settings.
        world: the world the trace ran on (its pack over the converter's index); None: static.
            Replayed on it and re-judged at the answer's version, with the task's shopper
            profile where the tool set offers ``ask_user``.
    """
    config = converter.config
    index: ProductIndex = world.overlay if world is not None else converter.index
    refused = _inputs(task, trajectory, log, source, index)
    if refused is not None or task is None or trajectory is None:
        return refused or Dropped("no_trajectory")
    toolset = source.versions.toolset or DEFAULT_TOOLSET
    profile = world.profile(task.task_id, toolset) if world is not None else None
    if profile is None and source.check("shopper") is not None:
        return Dropped("unknown_world", f"no shopper profile for task {task.task_id}")
    ctx = ToolContext(index=index, toolset=toolset)
    judge_config = replace(config.judge, toolset=toolset, catalog_version=index.catalog_version)
    seed = source_hash(trajectory, log)
    decided, unpruned = _pruned(log, config, ctx, source, profile)
    facts = converter.tasks(task)
    # Judged at the answer's version: pruning keeps the answer, so the pruned and the whole log agree.
    against = _against(task, log, toolset, index, world)
    while True:
        attempt = await _attempt(
            task, trajectory, decided.kept, facts, seed, converter, against, judge_config
        )
        if isinstance(attempt, Dropped):
            return attempt
        built, judgment, rewrites = attempt
        problem = judged_problem(source, judgment, min_driven=config.min_driven)
        if problem is None:
            break
        if not decided.dropped:
            return Dropped(problem, _explain(judgment, problem))
        decided, unpruned = Pruned(kept=tuple(sorted(log, key=lambda e: e.seq))), True
    provenance = Provenance("converted", seed, CONVERTER_VERSION, converter.writer.provenance)
    return Converted(
        trajectory=built,
        tool_log=decided.kept,
        judgment=judgment,
        provenance=provenance,
        pruned=decided.dropped,
        unpruned=unpruned,
        rewrites=rewrites,
    )


async def convert_judged(trace: JudgedTrace, converter: Converter) -> Conversion:
    """Convert a stored judged trace (its task, trajectory, tool log and Judgment), on its world if any.

    A world trace is converted on its world (``Converter.worlds``), or drops as ``unknown_world``.
    """
    world: WorldJudging | None = None
    pack_hash = trace.episode.pack_hash
    if pack_hash is not None:
        world = converter.worlds(pack_hash) if converter.worlds is not None else None
        if world is None:
            return Dropped("unknown_world", f"{trace.episode.world_id} ({pack_hash})")
    return await convert(
        trace.task, trace.trajectory, trace.tool_log, trace.judgment, converter=converter, world=world
    )


async def convert_all(
    traces: Sequence[JudgedTrace], converter: Converter, *, concurrency: int = 1
) -> list[Conversion]:
    """Convert several traces, in order, ``concurrency`` at a time (a teacher endpoint serves several)."""
    if concurrency <= 1:
        return [await convert_judged(trace, converter) for trace in traces]
    gate = asyncio.Semaphore(concurrency)

    async def one(trace: JudgedTrace) -> Conversion:
        async with gate:
            return await convert_judged(trace, converter)

    return list(await asyncio.gather(*(one(trace) for trace in traces)))


def run_now(make: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    """Run a conversion from synchronous code (curation): in place when it never waits, else in a loop.

    The template writer never waits, so stepping the coroutine once finishes it without an event
    loop (what keeps curation's conversion stage fast). A writer that does wait (a teacher
    endpoint) has its first try abandoned at its first wait and the conversion run again in an
    event loop: this thread's own when none runs here, else one in a worker thread.
    """
    first = make()
    try:
        first.send(None)
    except StopIteration as done:
        value: _T = done.value
        return value
    first.close()
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, make()).result()
