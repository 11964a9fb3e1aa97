"""The learning proof (`make learn`): fine-tune the embedded model on our export, evaluate on held-out tasks.

A synthetic world, generated tasks, leak clusters, a held-out set in never_touch, the scripted
harness's judged traces on the training tasks, curation with conversion, an SFT export, TRL on
the CPU, the tuned weights served by the same local server as the base, `arena eval` of both on
the held-out tasks, and `arena eval compare`. Writes bench/results/learning.json (or
learning-quick.json). Needs the local-llm and train extras (`make learn` installs them).

Example: python bench/learn.py --quick
Example: python bench/learn.py --work /tmp/learn --method lora
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from neurons.learning.pipeline import LearnPlan  # noqa: E402
from neurons.learning.run import run_learning  # noqa: E402
from neurons.learning.train import TrainPlan  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="toy size: a few minutes")
    parser.add_argument("--work", type=Path, default=None, help="work directory (default: a temp dir)")
    parser.add_argument("--method", choices=("full", "lora"), default=None, help="training method")
    parser.add_argument("--epochs", type=float, default=None, help="training epochs")
    parser.add_argument("--held-out", type=int, default=None, help="held-out tasks evaluated")
    parser.add_argument("--out", type=Path, default=None, help="result JSON (default bench/results/...)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    plan = LearnPlan.quick() if args.quick else LearnPlan()
    train: TrainPlan = plan.train
    if args.method:
        train = replace(train, method=args.method)
    if args.epochs:
        train = replace(train, epochs=args.epochs)
    plan = replace(plan, train=train, held_out=args.held_out or plan.held_out)
    work = args.work or Path(tempfile.mkdtemp(prefix="arena-learn-"))
    result = run_learning(plan, work, echo=lambda line: print(line, file=sys.stderr, flush=True))
    out = args.out or ROOT / "bench" / "results" / ("learning-quick.json" if args.quick else "learning.json")
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    comparison = result["comparison"]
    print(json.dumps({"base": result["base"], "tuned": result["tuned"], "comparison": comparison}, indent=2))
    print(f"wrote {out} (work dir {work})", file=sys.stderr)


if __name__ == "__main__":
    main()
