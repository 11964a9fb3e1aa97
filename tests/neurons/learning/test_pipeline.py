"""The learning pipeline's own pieces: run directories resumed only for the weights that made them."""

from __future__ import annotations

from pathlib import Path

from neurons.learning.pipeline import claim_run_dir


def test_a_run_dir_is_kept_for_the_same_weights_and_cleared_for_others(tmp_path: Path) -> None:
    weights, other = tmp_path / "a.gguf", tmp_path / "b.gguf"
    weights.write_bytes(b"weights a")
    other.write_bytes(b"weights b")
    run = tmp_path / "runs" / "tuned"
    claim_run_dir(run, weights)
    (run / "samples.jsonl").write_text("{}\n")
    claim_run_dir(run, weights)
    assert (run / "samples.jsonl").exists()  # same weights: resumable
    claim_run_dir(run, other)
    assert not (run / "samples.jsonl").exists() and (run / "weights.json").exists()


def test_a_run_dir_without_a_stamp_is_not_trusted(tmp_path: Path) -> None:
    weights = tmp_path / "a.gguf"
    weights.write_bytes(b"weights a")
    run = tmp_path / "runs" / "base"
    run.mkdir(parents=True)
    (run / "samples.jsonl").write_text("{}\n")
    claim_run_dir(run, weights)
    assert not (run / "samples.jsonl").exists()
