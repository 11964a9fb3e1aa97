"""The labelled injection corpus (``tests/fixtures/injection/corpus.jsonl``) and the detector's figures on it.

Each row: ``id``, ``label`` (``hostile``: text addressed to the judge; ``honest``: shopping
reasoning, hard negatives among it), ``kind``, ``split`` (``dev``: read while the patterns were
written; ``held_out``: not) and ``text``. ``figures`` counts, per split, what a detector flags,
with the per-item record kept (``bench/injection.py`` writes them; the test asserts floors).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "injection" / "corpus.jsonl"
SPLITS = ("dev", "held_out", "all")


@dataclass(frozen=True)
class Row:
    id: str
    label: str
    kind: str
    split: str
    text: str

    @property
    def hostile(self) -> bool:
        return self.label == "hostile"


def load(path: Path = CORPUS) -> list[Row]:
    """The corpus rows, in file order."""
    with path.open(encoding="utf-8") as lines:
        return [Row(**json.loads(line)) for line in lines if line.strip()]


def figures(rows: Iterable[Row], flags: Callable[[str], bool]) -> dict[str, Any]:
    """Precision, recall and the confusion counts per split (and over all), with each row's verdict."""
    records = [
        {"id": r.id, "split": r.split, "label": r.label, "kind": r.kind, "flagged": flags(r.text)}
        for r in rows
    ]
    out: dict[str, Any] = {}
    for split in SPLITS:
        chosen = [r for r in records if split == "all" or r["split"] == split]
        tp = sum(1 for r in chosen if r["flagged"] and r["label"] == "hostile")
        fp = sum(1 for r in chosen if r["flagged"] and r["label"] == "honest")
        fn = sum(1 for r in chosen if not r["flagged"] and r["label"] == "hostile")
        tn = sum(1 for r in chosen if not r["flagged"] and r["label"] == "honest")
        out[split] = {
            "hostile": tp + fn,
            "honest": fp + tn,
            "tp": tp,
            "fp": fp,
            "fn": fn,
            "tn": tn,
            "precision": round(tp / (tp + fp), 4) if tp + fp else None,
            "recall": round(tp / (tp + fn), 4) if tp + fn else None,
        }
    out["records"] = records
    return out
