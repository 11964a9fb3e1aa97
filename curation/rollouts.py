"""A policy's verified rollouts as training data: SFT rows of its successes, KTO rows with its failures.

The rollouts (``arena env rollouts``: k episodes per task of one policy in the RL environment,
judged as the validator judges, stored in a database of the validator's schema) go through the
same funnel as any judged trace (``curation.curate.curate``: hard rejects, the reasoning gate,
the axis gate, ranking, dedup and caps, the leak-cluster split and the task audit) and the same
export (``curation.export.export``), in two formats of their own (:func:`rollout_formats`):

- ``sft``: each kept success (the KTO positive label: success, a score of at least
  ``label_min_score``, nothing invented), the whole conversation and its tools;
- ``kto``: every kept trace with its label (the failures are the negatives);

each the export format of that name (``curation.formats``), its rows ``origin: rollout`` with
three more columns (``curation.formats.format.ROLLOUT_COLUMNS``): ``policy``, ``weights_hash``
and ``k``. The tool calls and results are the rollout's own, unchanged: each tool message is
what the environment logged for its call (a trace whose results differ from the log is
fabricated, and fabrication is a hard reject). The export's manifest lets ``arena eval
--train-manifest`` refuse any task whose leak cluster was trained on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from datasets import Features, Value

from curation.curate import Curation
from curation.export import export
from curation.formats import kto, sft
from curation.formats.format import ROLLOUT, ROLLOUT_COLUMNS, ExportRow, Format

ROLLOUT_FEATURES = {"policy": Value("string"), "weights_hash": Value("string"), "k": Value("int64")}


@dataclass(frozen=True)
class RolloutSource:
    """Where rollouts came from: the policy (a name), its weights' sha256 (None: unknown), k per task."""

    policy: str
    weights_hash: str | None
    k: int

    def columns(self) -> dict[str, Any]:
        """A rollout row's provenance columns, in place of a native row's."""
        return {
            "origin": ROLLOUT,
            "source_hash": None,
            "converter_version": None,
            "writer": None,
            "policy": self.policy,
            "weights_hash": self.weights_hash,
            "k": self.k,
        }


def rollout_format(base: Format, source: RolloutSource) -> Format:
    """``base`` (sft or kto) with its rows made rollout rows of ``source``."""
    columns = source.columns()

    def rows(curation: Curation) -> Iterator[ExportRow]:
        for made in base.build(curation):
            yield replace(made, row={**made.row, **columns})

    build: Callable[[Curation], Iterator[ExportRow]] = rows
    return replace(
        base,
        features=Features({**base.features, **ROLLOUT_FEATURES}),
        build=build,
        card_columns=(*base.card_columns, *ROLLOUT_COLUMNS),
    )


def rollout_formats(source: RolloutSource) -> tuple[Format, Format]:
    """The rollout export's formats: ``sft`` and ``kto``, their rows ``origin: rollout``."""
    return rollout_format(sft.FORMAT, source), rollout_format(kto.FORMAT, source)


def export_rollouts(curation: Curation, out_dir: Path, source: RolloutSource) -> dict[str, Any]:
    """Write the rollout export to ``out_dir`` (``curation.export.export``); return its funnel."""
    return export(curation, out_dir, formats=rollout_formats(source), source=f"rollouts of {source.policy}")
