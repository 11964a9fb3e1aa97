"""The demo's summary: per miner what the validator stored and its weight; per format, rows by origin."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich import box
from rich.table import Table

from judging.axis import axis_for_miner
from neurons.chain.local.state import read_weights
from storage.db import make_engine, make_sessionmaker
from storage.records import JudgedTrace
from storage.traces import iter_judged


@dataclass(frozen=True)
class MinerSummary:
    """One miner's row: its identity, what it did over the demo's rounds, and the weight it got.

    Attributes:
        hotkey: the miner's hotkey (ss58).
        uid: its uid on the local subnet.
        agent: which demo agent it runs (``scripted``, ``llm``, ``give_up``).
        tasks: episodes the validator judged and stored for it.
        successes: those judged a success.
        mean_score: the mean final score over them (miner faults count as 0).
        axis: its axis label over all its trajectories (``judging.axis.axis_for_miner``).
        weight: its share of the validator's weights on chain (u16 values normalised to sum 1).
    """

    hotkey: str
    uid: int
    agent: str
    tasks: int
    successes: int
    mean_score: float
    axis: str
    weight: float

    def as_json(self) -> dict[str, Any]:
        """The row as the JSON object ``arena demo --json`` prints."""
        return asdict(self)


@dataclass(frozen=True)
class DemoMiner:
    """A miner of the demo: hotkey, uid and agent kind."""

    hotkey: str
    uid: int
    agent: str


@dataclass(frozen=True)
class ExportCount:
    """One export format's rows (train and eval together) by origin, from the export's ``funnel.json``."""

    format: str
    rows: int
    native: int
    converted: int

    def as_json(self) -> dict[str, Any]:
        """The count as ``arena demo --json`` prints it."""
        return {"rows": self.rows, "native": self.native, "converted": self.converted}


def export_counts(export: Path) -> list[ExportCount]:
    """The SFT, KTO and DPO rows of the export by origin (empty when it has no ``funnel.json``)."""
    path = export / "funnel.json"
    if not path.is_file():
        return []
    funnel = json.loads(path.read_text(encoding="utf-8"))
    exports, origins = funnel.get("exports", {}), funnel.get("origins", {})
    return [
        ExportCount(
            format=name,
            rows=sum(exports.get(name, {}).values()),
            native=counts.get("native", 0),
            converted=counts.get("converted", 0),
        )
        for name, counts in origins.items()
    ]


def chain_weights(chain: Path, validator_uid: int) -> dict[int, float]:
    """The validator's weights on the local chain, normalised to sum 1 (empty when none are set)."""
    row = read_weights(chain).get(validator_uid, {})
    total = sum(row.values())
    return {uid: value / total for uid, value in row.items()} if total else {}


def load_traces(database_url: str) -> list[JudgedTrace]:
    """Every judged episode in the demo's database (a demo's database holds a few dozen)."""
    engine = make_engine(database_url)
    try:
        with make_sessionmaker(engine)() as session:
            return list(iter_judged(session))
    finally:
        engine.dispose()


def summarize(
    traces: Sequence[JudgedTrace], miners: Sequence[DemoMiner], weights: dict[int, float]
) -> list[MinerSummary]:
    """One row per miner, in uid order, from the stored traces and the weights on chain."""
    by_hotkey: dict[str, list[JudgedTrace]] = defaultdict(list)
    for trace in traces:
        by_hotkey[trace.episode.miner_hotkey].append(trace)
    rows = []
    for miner in sorted(miners, key=lambda m: m.uid):
        own = by_hotkey.get(miner.hotkey, [])
        with_trajectory = [t for t in own if t.trajectory is not None]
        axis = (
            axis_for_miner(
                [t.trajectory for t in with_trajectory if t.trajectory is not None],
                [t.tool_log for t in with_trajectory],
            ).label
            if with_trajectory
            else "unknown"
        )
        scores = [t.judgment.score for t in own]
        rows.append(
            MinerSummary(
                hotkey=miner.hotkey,
                uid=miner.uid,
                agent=miner.agent,
                tasks=len(own),
                successes=sum(1 for t in own if t.judgment.success),
                mean_score=round(sum(scores) / len(scores), 4) if scores else 0.0,
                axis=axis,
                weight=round(weights.get(miner.uid, 0.0), 4),
            )
        )
    return rows


def worlds_caption(worlds: Sequence[dict[str, Any]]) -> str:
    """Which worlds the rounds ran on (``DemoResult.worlds``), for the table's caption."""
    if not worlds:
        return "static tasks (no world packs)"
    return "worlds: " + ", ".join(f"round {w['round']} {w['world_id']}" for w in worlds)


def summary_table(
    rows: Sequence[MinerSummary], *, rounds: int, worlds: Sequence[dict[str, Any]] = ()
) -> Table:
    """The rows as a rich table (hotkeys shortened), captioned with the worlds the rounds ran on."""
    table = Table(
        title=f"Shopping Arena local network: {rounds} round{'s' * (rounds != 1)}",
        caption=worlds_caption(worlds),
        box=box.SIMPLE_HEAD,
        show_edge=False,
        collapse_padding=True,
    )
    for column, justify in (
        ("uid", "right"),
        ("hotkey", "left"),
        ("agent", "left"),
        ("tasks", "right"),
        ("successes", "right"),
        ("mean score", "right"),
        ("axis", "center"),
        ("weight", "right"),
    ):
        table.add_column(column, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(
            str(row.uid),
            f"{row.hotkey[:10]}…",
            row.agent,
            str(row.tasks),
            str(row.successes),
            f"{row.mean_score:.3f}",
            row.axis,
            f"{row.weight:.3f}",
        )
    return table


def export_table(counts: Sequence[ExportCount]) -> Table:
    """The export's rows per format and origin as a rich table."""
    table = Table(title="Export rows", box=box.SIMPLE_HEAD, show_edge=False, collapse_padding=True)
    for column in ("format", "rows", "native", "converted"):
        table.add_column(column, justify="left" if column == "format" else "right", no_wrap=True)
    for count in counts:
        table.add_row(count.format, str(count.rows), str(count.native), str(count.converted))
    return table
