"""The metric catalogue: names, bounded labels, and multiprocess aggregation across processes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.parser import text_string_to_metric_families

from neurons import metrics

# The unit (last word) a metric name may end with, per metric type.
UNITS = {
    "counter": {"total"},
    # episode: a count per episode (arena_shopper_questions_per_episode).
    "histogram": {"seconds", "bytes", "episode"},
    # ok: a boolean gauge, 1 while a check passes and 0 while it fails (Prometheus' own `up`).
    "gauge": {"seconds", "bytes", "info", "block", "ratio", "size", "rows", "score", "weight", "ok"},
}
# Every label name in use has a small, known value set. A new label must be added here on purpose.
BOUNDED_LABELS = {
    "axis",  # A, B, unknown
    "call",  # chain call name
    "cause",  # judge unscored cause; refused miner address cause
    "code",  # HTTP status code
    "direction",  # in, out
    "end",  # EpisodeEnd values
    "job_name",  # scheduler job name
    "kind",  # miner request failure kind
    "op",  # database operation
    "pack_hash",  # arena_world_info only: one series at a time, the last world's is removed
    "pool",  # task pool name
    "protocol",  # protocol version
    "reason",  # miner auth refusal reason
    "result",  # outcome of a round, submission or task
    "role",  # validator, miner
    "source",  # world pack: compiled, cached
    "stage",  # curation funnel stage
    "status",  # tool call status
    "tool",  # tool name
    "uid",  # at most 256 per subnet, per-miner gauges only
    "verdict",  # judgment verdict
    "version",  # package version
    "world_id",  # arena_world_info only: one series at a time, the last world's is removed
}
NAME = re.compile(r"^arena_[a-z][a-z0-9]*(_[a-z0-9]+)*$")


def _catalogue() -> list[MetricWrapperBase]:
    return [value for value in vars(metrics).values() if isinstance(value, MetricWrapperBase)]


def _full_name(metric: MetricWrapperBase) -> str:
    # prometheus-client stores a counter's name without "_total"; the exposed series has it.
    return f"{metric._name}_total" if metric._type == "counter" else metric._name


def test_catalogue_is_not_empty_and_names_are_unique() -> None:
    names = [_full_name(m) for m in _catalogue()]
    assert len(names) >= 20
    assert len(names) == len(set(names))


@pytest.mark.parametrize("metric", _catalogue(), ids=_full_name)
def test_name_is_arena_noun_unit(metric: MetricWrapperBase) -> None:
    name = _full_name(metric)
    assert NAME.match(name), name
    words = name.split("_")
    assert len(words) >= 3, f"{name}: needs a noun and a unit"
    assert words[-1] in UNITS[metric._type], f"{name}: unit {words[-1]!r} is not one for a {metric._type}"


@pytest.mark.parametrize("metric", _catalogue(), ids=_full_name)
def test_labels_are_bounded(metric: MetricWrapperBase) -> None:
    labels = set(metric._labelnames)
    assert not {label for label in labels if "hotkey" in label or "coldkey" in label}
    assert labels <= BOUNDED_LABELS, (
        f"{_full_name(metric)}: unbounded or unknown labels {labels - BOUNDED_LABELS}"
    )
    if "uid" in labels:
        assert metric._type == "gauge", "uid is allowed on per-miner gauges only"
    assert metric._documentation.strip(), "every metric has help text"


def test_render_latest_single_process_exposes_touched_metrics() -> None:
    metrics.EPISODES.labels(end="test_single").inc(3)
    content, content_type = metrics.render_latest()
    assert content_type == CONTENT_TYPE_LATEST
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(content.decode())
        for s in family.samples
    }
    assert samples[("arena_episodes_total", (("end", "test_single"),))] >= 3


_WORKER = """
import sys
from neurons import metrics
n = int(sys.argv[1])
metrics.ROUNDS.labels(result="ok").inc(n)
metrics.ROUND_DURATION.observe(0.2 * n)
metrics.CHAIN_BLOCK.set(100 * n)
metrics.MINER_SCORE.labels(uid="7").set(n / 10)
"""


def test_multiprocess_render_aggregates_every_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    multiproc = tmp_path / "prom"
    multiproc.mkdir()
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(multiproc)}
    # Two separate processes, one after the other so "mostrecent" has a defined winner.
    for n in (1, 2):
        subprocess.run([sys.executable, "-c", _WORKER, str(n)], env=env, check=True, timeout=60)
    assert len(list(multiproc.glob("*.db"))) >= 2  # each process wrote its own files

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(multiproc))
    content, _ = metrics.render_latest()
    values: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(content.decode()):
        for s in family.samples:
            values[(s.name, tuple(sorted((k, v) for k, v in s.labels.items() if k != "pid")))] = s.value
    assert values[("arena_rounds_total", (("result", "ok"),))] == 3  # 1 + 2, summed
    assert values[("arena_round_duration_seconds_count", ())] == 2
    assert values[("arena_round_duration_seconds_sum", ())] == pytest.approx(0.6)
    assert values[("arena_chain_block", ())] == 200  # max over processes
    assert values[("arena_miner_score", (("uid", "7"),))] == pytest.approx(0.2)  # most recent write
    # Only what the two workers wrote: this process's own (in-memory) samples are not mixed in.
    assert ("arena_episodes_total", (("end", "test_single"),)) not in values
