"""The ``convert`` and ``dedup`` stages, per leak cluster: convert what dedup could keep, drop repeats, cap.

The walk goes through the main stream one leak cluster at a time, best-ranked first. A native
trace goes straight to dedup. A trace to convert was stored as its source (``Row.pending``,
ranked as a converted trace, so natives of its task come first, and keyed by the calls it will
keep once converted: ``curation.stages.convert.prospective_keys``) and is converted here, when the
walk reaches it, and only if dedup could keep it: not an exact or near duplicate of a kept trace
on those keys, and its caps not full (the caps count (task, miner, outcome) and (task, outcome),
and conversion keeps all three, so a source whose caps are full would be capped after
conversion too). Most traces of a busy task never need converting; converting them all at
ingest was most of curation's time.

A source that is converted is re-read from the database (in pages of ``FETCH``), converted by
the pool (``curation.conversion.pool``: workers or in-process, the same result), and its
converted row goes through dedup with its own keys: it may still be an exact or near duplicate
of a kept trace. A conversion that fails is dropped at the convert stage with its reason and
takes no place under the caps, so the next source of its task gets the chance.

With workers, sources are sent ahead of the walk's decisions (up to the pool's window), against
what the walk hopes will be kept (every conversion sent succeeds with the keys it promised). A
source sent that then finds itself a duplicate or capped is wasted work; one that the hope
screened out but that nothing kept screens out (a conversion failed) is converted at its turn,
here. Neither changes a result: every decision is taken in rank order against what was kept
before it.
"""

from __future__ import annotations

from collections import Counter, defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from curation.config import CurationConfig
from curation.conversion.pool import ConversionPool
from curation.funnel import Funnel
from curation.signature import jaccard
from curation.stages.convert import Outcome
from curation.stages.stage import MAIN
from curation.workspace import KEPT, Row, Workspace
from storage.records import JudgedTrace
from storage.traces import judged_by_seq

FETCH = 64  # sources re-read from the database per query


def dedup(
    workspace: Workspace,
    config: CurationConfig,
    funnel: Funnel,
    *,
    session: Session | None = None,
    pool: ConversionPool[JudgedTrace, Outcome | None] | None = None,
) -> None:
    """Walk the main stream (module docstring): convert pending sources, drop duplicates, apply the caps.

    ``session`` and ``pool``: where pending sources are re-read from and converted; without
    them, there must be no pending rows (a curation without conversion stores none).
    """
    walk = _Walk(workspace, config, funnel, session, pool)
    total, low, high = 0.0, 1.0, 0.0
    for row in workspace.ranked(MAIN):
        total, low, high = total + row.structural, min(low, row.structural), max(high, row.structural)
        walk.add(row)
    walk.finish()
    ranked = funnel.stages["ranking"].n_out
    if ranked:
        funnel.stages["ranking"].notes = {
            "structural_mean": round(total / ranked, 4),
            "structural_min": low,
            "structural_max": high,
        }


class _Walk:
    """The walk's rows between reading and deciding: waiting for their sources, or for their conversion."""

    def __init__(
        self,
        workspace: Workspace,
        config: CurationConfig,
        funnel: Funnel,
        session: Session | None,
        pool: ConversionPool[JudgedTrace, Outcome | None] | None,
    ) -> None:
        self.workspace, self.config, self.funnel = workspace, config, funnel
        self.session, self.pool = session, pool
        self.cluster: str | None = None
        # What has been kept in this cluster, and what will be if every conversion sent succeeds
        # with the keys it promises: a source that the second screens out is not sent.
        self.state, self.hoped = _ClusterState(), _ClusterState()
        self.buffer: list[tuple[Row, _ClusterState]] = []  # read, sources not fetched yet
        self.needed: list[int] = []  # the buffer's pending rows worth converting
        self.waiting: deque[tuple[Row, _ClusterState]] = deque()  # in the pool, in walk order
        self.decisions: list[tuple[int, str]] = []
        self.converted: list[Row] = []

    def add(self, row: Row) -> None:
        if row.cluster != self.cluster:
            self.cluster, self.state, self.hoped = row.cluster, _ClusterState(), _ClusterState()
        self.buffer.append((row, self.state))
        if self.hoped.decide(row, self.config) == KEPT and row.pending:
            self.needed.append(row.seq)
        if len(self.needed) >= FETCH or len(self.buffer) >= self.config.batch_size:
            self._flush()

    def finish(self) -> None:
        self._flush()
        if self.pool is not None:
            self._decide_all(self.pool.rest())
        self._write()
        self.workspace.apply_conversions()
        self.workspace.commit()

    def _flush(self) -> None:
        if not self.buffer:
            return
        if self.needed and (self.session is None or self.pool is None or self.pool.converter is None):
            raise ValueError("pending rows to convert need the database session and a conversion pool")
        sources = judged_by_seq(self.session, self.needed) if self.session and self.needed else {}
        wanted = set(self.needed)
        for row, state in self.buffer:
            if self.pool is None:
                self._decide(row, state, None)
                continue
            self.waiting.append((row, state))
            if row.seq not in wanted:
                self.pool.add(None)  # not sent: decided as it is (or converted then, if need be)
            elif (source := sources.get(row.seq)) is not None:
                self.pool.submit(source)
            else:  # deleted from the database since it was read
                self.pool.add(Outcome(None, drop="source_gone"))
        self.buffer, self.needed = [], []
        if self.pool is not None:
            self._decide_all(self.pool.ready())

    def _decide_all(self, outcomes: Iterable[Outcome | None]) -> None:
        for outcome in outcomes:
            row, state = self.waiting.popleft()
            self._decide(row, state, outcome)

    def _decide(self, row: Row, state: _ClusterState, outcome: Outcome | None) -> None:
        """One row, in walk order: its conversion's count, then its dedup verdict."""
        funnel, notes = self.funnel, self.funnel.stages["convert"].notes
        funnel.entered("convert")
        if row.pending:
            screened = state.screen(row, self.config)
            if screened is not None:  # a duplicate or capped on the keys it would have: not converted
                funnel.passed("convert")
                notes["not_converted"] = notes.get("not_converted", 0) + 1
                self._verdict(row, screened)
                return
            if outcome is None:  # screened out by a hope that failed (a conversion dropped): convert now
                outcome = self._convert_here(row)
            if outcome.row is None:
                funnel.drop("convert", outcome.drop or "unknown")
                self.decisions.append((row.seq, f"convert:{outcome.drop}"))
                self._write_if_full()
                return
            for key, n in (("pruned_calls", outcome.pruned_calls), ("unpruned", outcome.unpruned)):
                notes[key] = notes.get(key, 0) + n
            row = outcome.row
        funnel.passed("convert")
        notes[row.origin] = notes.get(row.origin, 0) + 1
        verdict = state.decide(row, self.config)
        if verdict == KEPT and row.origin == "converted":
            self.converted.append(row)
        self._verdict(row, verdict)

    def _convert_here(self, row: Row) -> Outcome:
        assert self.session is not None and self.pool is not None and self.pool.converter is not None
        source = judged_by_seq(self.session, [row.seq]).get(row.seq)
        if source is None:
            return Outcome(None, drop="source_gone")
        outcome = self.pool.job(self.pool.converter, source)
        assert outcome is not None  # the job always returns one
        return outcome

    def _verdict(self, row: Row, verdict: str) -> None:
        self.funnel.entered("dedup")
        if verdict == KEPT:
            self.funnel.passed("dedup")
        else:
            self.funnel.drop("dedup", verdict)
        self.decisions.append((row.seq, verdict))
        self._write_if_full()

    def _write_if_full(self) -> None:
        if len(self.decisions) >= self.config.batch_size or len(self.converted) >= FETCH:
            self._write()

    def _write(self) -> None:
        self.workspace.decide(self.decisions)
        self.workspace.convert(self.converted)
        self.decisions, self.converted = [], []


@dataclass
class _ClusterState:
    """What dedup remembers within one leak cluster: kept signatures, kept step sets by answer, cap counts."""

    exact: set[str] = field(default_factory=set)
    steps_by_answer: dict[tuple[str, ...], list[frozenset[str]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    per_task_miner: Counter[tuple[str, str, bool]] = field(default_factory=Counter)
    per_task: Counter[tuple[str, bool]] = field(default_factory=Counter)

    def capped(self, row: Row, config: CurationConfig) -> str | None:
        """The cap ``row`` is over (its task and miner's, or its task's), or None."""
        if self.per_task_miner[(row.task_id, row.miner, row.success)] >= config.cap_per_task_miner:
            return "cap_task_miner"
        if self.per_task[(row.task_id, row.success)] >= config.cap_per_task:
            return "cap_task"
        return None

    def screen(self, row: Row, config: CurationConfig) -> str | None:
        """Why ``row`` would not be kept (a duplicate of a kept trace, or over a cap), or None.

        Only ever more rows are kept, so a row screened out stays screened out.
        """
        if row.exact in self.exact:
            return "exact_duplicate"
        if any(
            jaccard(row.steps, kept) >= config.near_dup_threshold for kept in self.steps_by_answer[row.answer]
        ):
            return "near_duplicate"
        return self.capped(row, config)

    def decide(self, row: Row, config: CurationConfig) -> str:
        """Keep ``row`` (and remember it) or name why not: a duplicate, or over a cap."""
        screened = self.screen(row, config)
        if screened is not None:
            return screened
        self.exact.add(row.exact)
        self.steps_by_answer[row.answer].append(row.steps)
        self.per_task_miner[(row.task_id, row.miner, row.success)] += 1
        self.per_task[(row.task_id, row.success)] += 1
        return KEPT


__all__ = ["FETCH", "dedup"]
