"""Judge-directed injection detection on the labelled corpus: precision and recall per split, and baselines.

Reads ``tests/fixtures/injection/corpus.jsonl`` (hostile and honest texts, ``dev`` and
``held_out`` splits) and runs three detectors over each text: ``judging.injection``'s
``addresses_the_judge`` (what the judge uses), and the two trivial baselines, flag everything
and flag nothing. Prints the figures and writes them, with every row's verdict, to ``--out``.

Example: python bench/injection.py
Example: python bench/injection.py --label before --out /tmp/injection-before.json
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judging.injection import addresses_the_judge  # noqa: E402
from tests.judging.injection_corpus import SPLITS, figures, load  # noqa: E402


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "injection.json")
    parser.add_argument("--label", default="current", help="a name for the detector's state (e.g. before)")
    args = parser.parse_args()
    rows = load()
    started = time.perf_counter()
    detector = figures(rows, addresses_the_judge)
    seconds = time.perf_counter() - started
    result: dict[str, Any] = {
        "bench": "injection",
        "label": args.label,
        "commit": _commit(),
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "rows": len(rows),
        "detector_seconds": round(seconds, 4),
        "detectors": {
            "addresses_the_judge": detector,
            "flag_everything": figures(rows, lambda text: True),
            "flag_nothing": figures(rows, lambda text: False),
        },
    }
    for name, found in result["detectors"].items():
        for split in SPLITS:
            f = found[split]
            print(
                f"{name:20s} {split:8s} hostile={f['hostile']:3d} honest={f['honest']:3d} tp={f['tp']:3d} "
                f"fp={f['fp']:3d} fn={f['fn']:3d} precision={f['precision']} recall={f['recall']}"
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
