"""The PromQL name extractor the deploy tests rely on."""

from __future__ import annotations

import pytest

from tests.deploy.promql import metric_names, plain_promql


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ("up", {"up"}),
        ('up{job="arena-validator"} == 0', {"up"}),
        (
            "sum by (le) (rate(arena_round_duration_seconds_bucket[5m]))",
            {"arena_round_duration_seconds_bucket"},
        ),
        (
            "histogram_quantile(0.99, sum by (le, tool) (rate(arena_tool_call_duration_seconds_bucket[5m])))",
            {"arena_tool_call_duration_seconds_bucket"},
        ),
        (
            "sum(rate(a_total[5m])) by (job) / on (job) group_left (instance) sum(rate(b_total[5m])) by (j)",
            {"a_total", "b_total"},
        ),
        (
            'time() - arena_metagraph_sync_timestamp_seconds{instance=~"v.*"} > 3600',
            {"arena_metagraph_sync_timestamp_seconds"},
        ),
        ("clamp_min(x, 1e-9) > 0.25 and y offset 5m", {"x", "y"}),
        ('count({__name__="arena_chain_block"})', {"arena_chain_block"}),
        ('label_replace(m, "dst", "$1", "src", "(.*)")', {"m"}),
        (
            "topk(10, arena_miner_score) unless arena_miner_weight == bool 0",
            {"arena_miner_score", "arena_miner_weight"},
        ),
        ("predict_linear(node_filesystem_avail_bytes[6h], 24 * 3600) < 0", {"node_filesystem_avail_bytes"}),
    ],
)
def test_metric_names(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


def test_plain_promql_replaces_grafana_variables() -> None:
    expr = 'rate(m{instance=~"$instance", job=~"${job}"}[$__rate_interval])'
    assert plain_promql(expr) == 'rate(m{instance=~".*", job=~".*"}[5m])'
