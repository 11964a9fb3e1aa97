"""Start-up time of the command line and the miner: this tree against an older commit, in the same run.

Each case starts a fresh interpreter (as the ``arena`` script does) with ``PYTHONPATH`` pointing at
one of the two trees: this working tree ("after") and ``--before`` (default 7761e91, the last
commit before the lazy command line) extracted with ``git archive`` into a temporary directory.
Both use this virtual environment, so only our code differs. Runs alternate between the two trees
so that a change in machine load hits both alike; the figures are the median and minimum wall
time per case, plus the heavy libraries (datasets, pyarrow, pandas, torch, nltk) each case loaded.

Cases: ``arena --help``, ``arena version``, ``arena judge --help``, a real ``arena judge`` of one
trajectory on the 20-product fixture index, importing the miner's process module (``neurons.miner``
before the role packages, ``neurons.miner.process`` after), and ``arena miner`` up to its settings
check (the process module imported, then exit 2 on a local network without its chain file).

Example: python bench/startup.py --runs 7
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arena.index import build_index  # noqa: E402
from bench.judge import episode, load_catalog  # noqa: E402

HEAVY = ("datasets", "pyarrow", "pandas", "torch", "nltk")
CATALOG = ROOT / "tests" / "fixtures" / "catalog.jsonl"
# Run argv as the `arena` script would, or import one module; then report the heavy modules loaded.
_SCRIPT = """
import json, sys
kind, value, wanted = sys.argv[1], json.loads(sys.argv[2]), set(json.loads(sys.argv[3]))
if kind == "import":
    __import__(value)
else:
    sys.argv = ["arena", *value]
    from neurons.cli import main
    try:
        main()
    except SystemExit:
        pass
heavy = sorted({m.split(".")[0] for m in sys.modules} & wanted)
sys.stderr.write("\\nheavy=" + json.dumps(heavy) + "\\n")
"""


def extract(rev: str, into: Path) -> Path:
    """The tree of ``rev`` (tracked files only) under ``into``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def judge_inputs(workdir: Path) -> list[str]:
    """Index the fixture catalog and write one task, trajectory and tool log; the `arena judge` argv."""
    index = workdir / "index"
    build_index([CATALOG], index)
    task, trajectory, log = episode(load_catalog(), 1, 2)
    (workdir / "task.json").write_text(task.model_dump_json(), encoding="utf-8")
    (workdir / "trajectory.json").write_text(json.dumps(trajectory.to_wire()), encoding="utf-8")
    (workdir / "log.json").write_text(json.dumps([e.model_dump(mode="json") for e in log]), encoding="utf-8")
    return ["judge", "--index", str(index), "--task", str(workdir / "task.json")] + [
        "--trajectory",
        str(workdir / "trajectory.json"),
        "--tool-log",
        str(workdir / "log.json"),
    ]


def cases(judge_argv: list[str]) -> dict[str, dict[str, tuple[str, Any]]]:
    """Case name -> tree -> (kind, argv or module)."""
    miner = ["miner", "--network", "local", "--netuid", "1"]
    both = {
        "arena --help": ("argv", ["--help"]),
        "arena version": ("argv", ["version"]),
        "arena judge --help": ("argv", ["judge", "--help"]),
        "arena judge (one trajectory)": ("argv", judge_argv),
        "arena miner (to its settings check)": ("argv", miner),
    }
    table = {name: {"before": spec, "after": spec} for name, spec in both.items()}
    table["import the miner process"] = {
        "before": ("import", "neurons.miner"),
        "after": ("import", "neurons.miner.process"),
    }
    return table


def run_once(tree: Path, kind: str, value: Any, cwd: Path) -> tuple[float, list[str]]:
    """Wall seconds of one fresh interpreter running the case, and the heavy libraries it loaded."""
    env = {name: v for name, v in os.environ.items() if not name.startswith("ARENA_")}
    env["PYTHONPATH"] = str(tree)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, kind, json.dumps(value), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )
    seconds = time.perf_counter() - started
    marker = [line for line in done.stderr.splitlines() if line.startswith("heavy=")]
    if not marker:
        raise RuntimeError(f"{kind} {value} in {tree} failed:\n{done.stderr[-2000:]}")
    return seconds, list(json.loads(marker[-1].removeprefix("heavy=")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="7761e91", help="the commit to compare with")
    parser.add_argument("--runs", type=int, default=5, help="runs per case and tree")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "startup.json")
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="arena-startup-") as tmp:
        work = Path(tmp)
        trees = {"before": extract(args.before, work / "before"), "after": ROOT}
        table = cases(judge_inputs(work))
        rows = []
        for name, specs in table.items():
            times: dict[str, list[float]] = {"before": [], "after": []}
            heavy: dict[str, list[str]] = {}
            for _ in range(args.runs):
                for tree in ("before", "after"):  # alternating: load changes hit both alike
                    seconds, loaded = run_once(trees[tree], *specs[tree], cwd=work)
                    times[tree].append(seconds)
                    heavy[tree] = loaded
            row: dict[str, Any] = {"case": name}
            for tree in ("before", "after"):
                row[tree] = {
                    "median_s": round(statistics.median(times[tree]), 3),
                    "min_s": round(min(times[tree]), 3),
                    "heavy_modules": heavy[tree],
                }
            row["speedup"] = round(row["before"]["median_s"] / row["after"]["median_s"], 2)
            rows.append(row)
            before, after = row["before"]["median_s"], row["after"]["median_s"]
            print(
                f"{name:38s} before {before:6.2f} s  after {after:6.2f} s  x{row['speedup']:<5}"
                f"  heavy before={','.join(heavy['before']) or '-'} after={','.join(heavy['after']) or '-'}"
            )
    result = {
        "name": "startup",
        "before": args.before,
        "runs": args.runs,
        "cpu_count": os.cpu_count(),
        "load_average": {
            "start": [round(x, 2) for x in load_before],
            "end": [round(x, 2) for x in os.getloadavg()],
        },
        "python": platform.python_version(),
        "cases": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
