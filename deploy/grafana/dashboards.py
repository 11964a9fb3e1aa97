"""Generates the Grafana dashboards in deploy/grafana/dashboards/ (run: python deploy/grafana/dashboards.py).

The JSON files are committed so `docker compose up` needs no Python; tests/deploy checks that
they match this script, that every panel's PromQL parses, and that it names only exported metrics.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

DATASOURCE = {"type": "prometheus", "uid": "arena-prometheus"}
OUT = Path(__file__).parent / "dashboards"
V = 'instance=~"$instance"'  # the validator instance selector
M = 'instance=~"$miner"'  # the miner instance selector
RATE = "$__rate_interval"
JUDGMENTS = f"arena_judgments_total{{{V}}}"
TOOLSERVER = f"arena_toolserver_requests_total{{{V}}}"
Json = dict[str, Any]


def target(expr: str, legend: str = "", *, table: bool = False) -> Json:
    """One Prometheus query of a panel (``table`` for an instant query in table format)."""
    out: Json = {"datasource": DATASOURCE, "expr": expr, "legendFormat": legend or "__auto"}
    if table:
        out.update(instant=True, range=False, format="table")
    return out


def panel(
    kind: str,
    title: str,
    description: str,
    targets: list[Json],
    unit: str = "short",
    *,
    thresholds: tuple[float, float] | None = None,
    **extra: Any,
) -> Json:
    """A panel without position (``layout`` places it); ``thresholds`` are (orange, red) from below."""
    defaults: Json = {"unit": unit}
    if thresholds is not None:
        steps = [{"color": "green", "value": None}]
        steps += [
            {"color": color, "value": value}
            for color, value in zip(("orange", "red"), thresholds, strict=True)
        ]
        defaults["thresholds"] = {"mode": "absolute", "steps": steps}
        defaults["color"] = {"mode": "thresholds"}
    return {
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "targets": targets,
        "fieldConfig": {"defaults": defaults, "overrides": []},
        **extra,
    }


def quantiles(
    metric: str, by: str = "", selector: str = V, qs: tuple[float, ...] = (0.5, 0.99)
) -> list[Json]:
    """p50/p99 (or other quantiles) of a histogram, optionally split by a label."""
    group = f"le, {by}" if by else "le"
    return [
        target(
            f"histogram_quantile({q}, sum by ({group}) (rate({metric}_bucket{{{selector}}}[{RATE}])))",
            f"p{round(q * 100)}" + (f" {{{{{by}}}}}" if by else ""),
        )
        for q in qs
    ]


def ratio(numerator: str, denominator: str, fn: str = "rate", window: str = RATE, floor: str = "1e-9") -> str:
    """PromQL for sum(fn(numerator)) / sum(fn(denominator)), safe when the denominator is 0."""
    return f"sum({fn}({numerator}[{window}])) / clamp_min(sum({fn}({denominator}[{window}])), {floor})"


def row(title: str) -> Json:
    """A collapsed-off row header."""
    return {"type": "row", "title": title, "collapsed": False, "panels": []}


def variable(name: str, label: str, role: str) -> Json:
    """A multi-select instance variable over the processes of one role."""
    query = f'label_values(arena_build_info{{role="{role}"}}, instance)'
    return {
        "name": name,
        "label": label,
        "type": "query",
        "datasource": DATASOURCE,
        "query": {"query": query, "refId": f"{name}-var"},
        "definition": query,
        "refresh": 2,
        "includeAll": True,
        "multi": True,
        "allValue": ".*",
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        "sort": 1,
    }


def layout(panels: list[Json]) -> list[Json]:
    """Place panels left to right on a 24-column grid: rows full width, stats 4 wide, others 12."""
    x = y = height = 0
    placed = []
    for number, item in enumerate(panels, start=1):
        width = {"row": 24, "stat": 4}.get(item["type"], 24 if item["type"] == "table" else 12)
        h = {"row": 1, "stat": 4}.get(item["type"], 8)
        if x + width > 24 or item["type"] == "row":
            x, y = 0, y + height
            height = 0
        placed.append({**item, "id": number, "gridPos": {"h": h, "w": width, "x": x, "y": y}})
        x, height = x + width, max(height, h)
        if item["type"] == "row":
            x, y, height = 0, y + h, 0
    return placed


def dashboard(uid: str, title: str, description: str, panels: list[Json], variables: list[Json]) -> Json:
    """A complete dashboard model."""
    return {
        "uid": uid,
        "title": title,
        "description": description,
        "tags": ["shopping-arena"],
        "timezone": "utc",
        "schemaVersion": 39,
        "version": 1,
        "editable": False,
        "graphTooltip": 1,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": variables},
        "annotations": {"list": []},
        "links": [{"type": "dashboards", "tags": ["shopping-arena"], "asDropdown": True, "title": "Arena"}],
        "panels": layout(panels),
    }


VALIDATOR = variable("instance", "Validator", "validator")
MINER = variable("miner", "Miner", "miner")


def chain_health_stats() -> list[Json]:
    """The two chain stats the overview and the chain board both lead with (they back two alerts)."""
    return [
        panel(
            "stat",
            "Blocks since weights",
            "Chain block minus the block of the last successful set_weights (alert at 720 and 3600).",
            [target(f"max(arena_chain_block{{{V}}}) - max(arena_weights_last_success_block{{{V}}})")],
            "none",
            thresholds=(720, 3600),
        ),
        panel(
            "stat",
            "Metagraph age",
            "Seconds since the last successful metagraph sync (alert at 1 h).",
            [target(f"time() - max(arena_metagraph_sync_timestamp_seconds{{{V}}})")],
            "s",
        ),
    ]


def overview() -> Json:
    """The validator at a glance: liveness, rounds, episodes, storage, jobs and curation."""
    return dashboard(
        "arena-validator-overview",
        "Arena / Validator overview",
        "Is the validator alive, running rounds, setting weights and storing what it judges?",
        [
            row("Health"),
            panel(
                "stat",
                "Up",
                "1 when Prometheus can scrape the validator.",
                [target(f'up{{job="arena-validator", {V}}}', "{{instance}}")],
                "none",
                thresholds=(0.5, 0.5),
                mappings=[
                    {
                        "type": "value",
                        "options": {
                            "0": {"text": "DOWN", "color": "red"},
                            "1": {"text": "UP", "color": "green"},
                        },
                    }
                ],
            ),
            panel(
                "stat",
                "Version",
                "Running version (arena_build_info).",
                [target(f"arena_build_info{{{V}}}", "{{version}} p{{protocol}}")],
                "none",
                options={"reduceOptions": {"calcs": ["lastNotNull"]}, "textMode": "name"},
            ),
            panel(
                "stat",
                "Rounds, last hour",
                "Rounds completed in the last hour, any result.",
                [target(f"sum(increase(arena_rounds_total{{{V}}}[1h]))")],
            ),
            *chain_health_stats(),
            panel(
                "stat",
                "Judge unscored",
                "Share of judgments with unscored checks, last hour (alert at 25%).",
                [target(ratio(f"arena_judge_unscored_total{{{V}}}", JUDGMENTS, "increase", "1h", "1"))],
                "percentunit",
            ),
            row("Rounds and episodes"),
            panel(
                "timeseries",
                "Rounds per hour by result",
                "Completed rounds, by result.",
                [target(f"sum by (result) (increase(arena_rounds_total{{{V}}}[1h]))", "{{result}}")],
            ),
            panel(
                "timeseries",
                "Round duration",
                "p50 and p99 wall time of one round.",
                quantiles("arena_round_duration_seconds"),
                "s",
            ),
            panel(
                "timeseries",
                "Episodes by end",
                "Episodes finished per second, by how they ended.",
                [target(f"sum by (end) (rate(arena_episodes_total{{{V}}}[{RATE}]))", "{{end}}")],
                "ops",
            ),
            panel(
                "timeseries",
                "Task pools",
                "Tasks in each pool (live, held-out, burned...).",
                [target(f"sum by (pool) (arena_task_pool_size{{{V}}})", "{{pool}}")],
            ),
            row("Worlds"),
            panel(
                "stat",
                "World",
                "The world pack rounds run on now (arena_world_info; none: world rounds off or unseeded).",
                [target(f"arena_world_info{{{V}}}", "{{world_id}}")],
                "none",
                options={"reduceOptions": {"calcs": ["lastNotNull"]}, "textMode": "name"},
            ),
            panel(
                "timeseries",
                "World start block",
                "Start block of the world served; a step is a new world (every world period).",
                [target(f"max(arena_world_start_block{{{V}}})", "start block")],
                "none",
            ),
            panel(
                "timeseries",
                "World compile time",
                "p50 and p99 time to ready a round's world: compiled from its seed, or loaded from cache.",
                quantiles("arena_world_compile_seconds", "source"),
                "s",
            ),
            panel(
                "timeseries",
                "Shopper questions per episode",
                "p50 and p99 ask_user calls per world episode (the validator's tool log).",
                quantiles("arena_shopper_questions_per_episode"),
                "none",
            ),
            row("Storage and jobs"),
            panel(
                "timeseries",
                "DB write latency",
                "p50 and p99 of one write transaction, by operation.",
                quantiles("arena_db_write_duration_seconds", "op"),
                "s",
            ),
            panel(
                "timeseries",
                "DB errors",
                "Database errors per second, by operation.",
                [target(f"sum by (op) (rate(arena_db_errors_total{{{V}}}[{RATE}]))", "{{op}}")],
                "ops",
            ),
            panel(
                "timeseries",
                "Job failures",
                "Scheduler job runs that raised, per hour (label job_name).",
                [
                    target(
                        f"sum by (job_name) (increase(arena_job_failures_total{{{V}}}[1h]))",
                        "{{job_name}}",
                    )
                ],
            ),
            panel(
                "timeseries",
                "Curation funnel",
                "Rows in and out of each curation stage at the last export.",
                [
                    target(
                        f"sum by (stage, direction) (arena_curation_rows{{{V}}})", "{{stage}} {{direction}}"
                    )
                ],
            ),
        ],
        [VALIDATOR],
    )


def miners() -> Json:
    """Per-miner scores and weights, validator-to-miner requests, and the miner processes themselves."""
    return dashboard(
        "arena-miners",
        "Arena / Miners",
        "How miners score and are weighted, how requests to them fail, and (for miner operators) the miner.",
        [
            row("Scores and weights (validator's view)"),
            panel(
                "table",
                "Score and weight per uid",
                "Windowed lower-bound score and last submitted weight of every miner uid.",
                [
                    target(f"max by (uid) (arena_miner_score{{{V}}})", table=True),
                    target(f"max by (uid) (arena_miner_weight{{{V}}})", table=True),
                ],
                "none",
                transformations=[
                    {"id": "merge", "options": {}},
                    {
                        "id": "organize",
                        "options": {
                            "excludeByName": {"Time": True},
                            "renameByName": {"Value #A": "score", "Value #B": "weight"},
                        },
                    },
                    {"id": "sortBy", "options": {"sort": [{"field": "weight", "desc": True}]}},
                ],
            ),
            panel(
                "timeseries",
                "Top 10 scores",
                "The ten highest miner scores over time.",
                [target(f"topk(10, max by (uid) (arena_miner_score{{{V}}}))", "uid {{uid}}")],
            ),
            panel(
                "timeseries",
                "Top 10 weights",
                "The ten largest submitted weights over time.",
                [target(f"topk(10, max by (uid) (arena_miner_weight{{{V}}}))", "uid {{uid}}")],
                "percentunit",
            ),
            row("Requests to miners"),
            panel(
                "timeseries",
                "Request latency",
                "p50, p90 and p99 validator-to-miner request time.",
                quantiles("arena_miner_request_duration_seconds", qs=(0.5, 0.9, 0.99)),
                "s",
            ),
            panel(
                "timeseries",
                "Failures by kind",
                "Failed miner requests per second, by kind (timeout, too_large, bad_signature...).",
                [
                    target(
                        f"sum by (kind) (rate(arena_miner_request_failures_total{{{V}}}[{RATE}]))", "{{kind}}"
                    )
                ],
                "ops",
            ),
            panel(
                "timeseries",
                "Failure ratio",
                "Failed requests over all requests (alert above 50% for 30 min).",
                [
                    target(
                        ratio(
                            f"arena_miner_request_failures_total{{{V}}}",
                            f"arena_miner_request_duration_seconds_count{{{V}}}",
                        ),
                        "failed",
                    )
                ],
                "percentunit",
            ),
            panel(
                "timeseries",
                "Miners not queried (address refused)",
                "Miners left out of rounds per hour: their advertised address is not global (by cause).",
                [
                    target(
                        f"sum by (cause) (increase(arena_miner_endpoint_refusals_total{{{V}}}[1h]))",
                        "{{cause}}",
                    )
                ],
                "none",
            ),
            row("Miner process (miner operators)"),
            panel(
                "timeseries",
                "Tasks by result",
                "Tasks the miner received per second, by result.",
                [target(f"sum by (result) (rate(arena_miner_tasks_total{{{M}}}[{RATE}]))", "{{result}}")],
                "ops",
            ),
            panel(
                "timeseries",
                "Agent time per task",
                "p50 and p99 of the agent's time per task.",
                quantiles("arena_miner_task_duration_seconds", selector=M),
                "s",
            ),
            panel(
                "timeseries",
                "Refused requests",
                "Requests the miner refused per second, by reason.",
                [
                    target(
                        f"sum by (reason) (rate(arena_miner_auth_failures_total{{{M}}}[{RATE}]))",
                        "{{reason}}",
                    )
                ],
                "ops",
            ),
            panel(
                "timeseries",
                "Miner metagraph age",
                "Seconds since the miner's last good metagraph; past its max age (600 s) it admits no one.",
                [
                    target(
                        f"time() - max by (instance) (arena_metagraph_sync_timestamp_seconds{{{M}}})",
                        "{{instance}}",
                    )
                ],
                "s",
            ),
        ],
        [VALIDATOR, MINER],
    )


def judge() -> Json:
    """Judgments by verdict and axis, judge latency, unscored checks by cause, refusals."""
    return dashboard(
        "arena-judge",
        "Arena / Judge",
        "What the judge decides, how fast, and how often the reasoning LLM leaves checks unscored.",
        [
            panel(
                "stat",
                "Judgments, last hour",
                "Trajectories judged in the last hour.",
                [target(f"sum(increase(arena_judgments_total{{{V}}}[1h]))")],
            ),
            panel(
                "stat",
                "Success share",
                "Share of judgments with verdict success, last hour.",
                [
                    target(
                        ratio(
                            f'arena_judgments_total{{verdict="success", {V}}}',
                            JUDGMENTS,
                            "increase",
                            "1h",
                            "1",
                        )
                    )
                ],
                "percentunit",
            ),
            panel(
                "stat",
                "Axis A share",
                "Share of judged trajectories whose tool calls the model chose (axis A), last hour.",
                [target(ratio(f'arena_judgments_total{{axis="A", {V}}}', JUDGMENTS, "increase", "1h", "1"))],
                "percentunit",
            ),
            panel(
                "stat",
                "Unscored share",
                "Unscored checks per judgment, last hour (alert at 25%).",
                [target(ratio(f"arena_judge_unscored_total{{{V}}}", JUDGMENTS, "increase", "1h", "1"))],
                "percentunit",
            ),
            panel(
                "timeseries",
                "Judgments by verdict",
                "Judgments per second, by verdict.",
                [target(f"sum by (verdict) (rate(arena_judgments_total{{{V}}}[{RATE}]))", "{{verdict}}")],
                "ops",
            ),
            panel(
                "timeseries",
                "Judgments by axis",
                "Judgments per second, by axis label (A: the model chose the calls).",
                [target(f"sum by (axis) (rate(arena_judgments_total{{{V}}}[{RATE}]))", "{{axis}}")],
                "ops",
            ),
            panel(
                "timeseries",
                "Judge latency",
                "p50 and p99 time to judge one trajectory (rules and LLM).",
                quantiles("arena_judge_duration_seconds"),
                "s",
            ),
            panel(
                "timeseries",
                "Unscored by cause",
                "Reasoning checks left unscored per second, by cause.",
                [target(f"sum by (cause) (rate(arena_judge_unscored_total{{{V}}}[{RATE}]))", "{{cause}}")],
                "ops",
            ),
            panel(
                "timeseries",
                "Judge refusals (4xx)",
                "Judge requests refused with a 4xx per second: our request's fault (alert on any).",
                [target(f"sum(rate(arena_judge_refusals_total{{{V}}}[{RATE}]))", "refused")],
                "ops",
            ),
            panel(
                "timeseries",
                "Duplicate work",
                "Episodes per second that repeated work already credited in the round (stored at 0).",
                [target(f"sum(rate(arena_duplicate_episodes_total{{{V}}}[{RATE}]))", "duplicates")],
                "ops",
            ),
        ],
        [VALIDATOR],
    )


def toolserver() -> Json:
    """Tool server HTTP status codes and per-tool calls and latency."""
    return dashboard(
        "arena-toolserver",
        "Arena / Tool server",
        "The tools miners' agents call: requests by status, calls by tool, latency.",
        [
            panel(
                "stat",
                "Requests/s",
                "Tool server HTTP requests per second.",
                [target(f"sum(rate(arena_toolserver_requests_total{{{V}}}[{RATE}]))")],
                "reqps",
            ),
            panel(
                "stat",
                "5xx share",
                "Server errors over all requests (alert above 5% for 10 min).",
                [target(ratio(f'arena_toolserver_requests_total{{code=~"5..", {V}}}', TOOLSERVER))],
                "percentunit",
            ),
            panel(
                "stat",
                "4xx share",
                "Refused requests (bad token, budget spent, bad body) over all requests.",
                [target(ratio(f'arena_toolserver_requests_total{{code=~"4..", {V}}}', TOOLSERVER))],
                "percentunit",
            ),
            panel(
                "timeseries",
                "Requests by status code",
                "Tool server HTTP requests per second, by status code.",
                [target(f"sum by (code) (rate(arena_toolserver_requests_total{{{V}}}[{RATE}]))", "{{code}}")],
                "reqps",
            ),
            panel(
                "timeseries",
                "Calls by tool and status",
                "Tool calls executed per second.",
                [
                    target(
                        f"sum by (tool, status) (rate(arena_tool_calls_total{{{V}}}[{RATE}]))",
                        "{{tool}} {{status}}",
                    )
                ],
                "ops",
            ),
            panel(
                "timeseries",
                "Inference gateway exchanges",
                "Requests through the inference gateway per second, by result: ok, refused (the miner's "
                "request), upstream_error (the miner's model), gateway_error (ours: never scores the miner).",
                [
                    target(
                        f"sum by (result) (rate(arena_gateway_exchanges_total{{{V}}}[{RATE}]))",
                        "{{result}}",
                    )
                ],
                "reqps",
            ),
            panel(
                "timeseries",
                "Attested tool calls",
                "Tool calls per second that matched a completion the gateway served (axis A-attested).",
                [target(f"sum(rate(arena_attested_tool_calls_total{{{V}}}[{RATE}]))", "attested")],
                "ops",
            ),
            panel(
                "timeseries",
                "Tool latency p50",
                "Median time to execute one call, by tool.",
                quantiles("arena_tool_call_duration_seconds", "tool", qs=(0.5,)),
                "s",
            ),
            panel(
                "timeseries",
                "Tool latency p99",
                "99th percentile time to execute one call, by tool.",
                quantiles("arena_tool_call_duration_seconds", "tool", qs=(0.99,)),
                "s",
            ),
            panel(
                "timeseries",
                "Open connections",
                "Connections open on the public port (the cap is ARENA_SERVING__MAX_CONNECTIONS).",
                [target(f"max(arena_http_open_connections_size{{{V}}})", "open")],
                "none",
            ),
            panel(
                "timeseries",
                "Connections refused or cut",
                "Per second, by reason: a peer over its caps, the port at its cap, an eviction, a slow head.",
                [
                    target(
                        f"sum by (reason) (rate(arena_http_refused_connections_total{{{V}}}[{RATE}]))",
                        "{{reason}}",
                    )
                ],
                "cps",
            ),
            panel(
                "timeseries",
                "RL environment steps",
                "`arena env serve`: steps per second, by result (ok, error: an agent's fault, refused: past "
                "the end or the budget). Any instance: the environment runs apart from the validator.",
                [target(f"sum by (result) (rate(arena_env_steps_total[{RATE}]))", "{{result}}")],
                "ops",
            ),
            panel(
                "timeseries",
                "RL environment episodes",
                "`arena env serve`: episodes finished per second, by end "
                "(terminated, max_steps, timeout, finished).",
                [target(f"sum by (end) (rate(arena_env_episodes_total[{RATE}]))", "{{end}}")],
                "ops",
            ),
        ],
        [VALIDATOR],
    )


def chain() -> Json:
    """Blocks, weight submissions, metagraph freshness and chain call errors."""
    return dashboard(
        "arena-chain",
        "Arena / Chain",
        "The validator's view of the chain: blocks, weight submissions, metagraph freshness, errors.",
        [
            panel(
                "stat",
                "Chain block",
                "Latest block seen.",
                [target(f"max(arena_chain_block{{{V}}})")],
                "none",
            ),
            panel(
                "stat",
                "Last weights block",
                "Block by which the last weights were on chain (set, or a commit's reveal verified).",
                [target(f"max(arena_weights_last_success_block{{{V}}})")],
                "none",
            ),
            *chain_health_stats(),
            panel(
                "timeseries",
                "Blocks since weights",
                "Chain block minus the block of the last successful submission.",
                [
                    target(
                        f"max by (instance) (arena_chain_block{{{V}}})"
                        f" - max by (instance) (arena_weights_last_success_block{{{V}}})",
                        "{{instance}}",
                    )
                ],
                "none",
            ),
            panel(
                "timeseries",
                "Weight submissions by result",
                "set_weights submissions per hour, by result (success, rate_limited...).",
                [
                    target(
                        f"sum by (result) (increase(arena_weight_submissions_total{{{V}}}[1h]))", "{{result}}"
                    )
                ],
            ),
            panel(
                "timeseries",
                "Weight reveals by result",
                "Timelocked commits checked after their reveal round, per hour: revealed or missing.",
                [target(f"sum by (result) (increase(arena_weight_reveals_total{{{V}}}[1h]))", "{{result}}")],
            ),
            panel(
                "timeseries",
                "Chain errors by call",
                "Failed chain calls per second, by call.",
                [target(f"sum by (call) (rate(arena_chain_errors_total{{{V}}}[{RATE}]))", "{{call}}")],
                "ops",
            ),
            panel(
                "timeseries",
                "Self-check and refusals in our name",
                "1 while the self-check passes; failures by cause, and refusals naming our state, per hour.",
                [
                    target(f"min by (instance) (arena_validator_self_check_ok{{{V}}})", "self-check ok"),
                    target(
                        f"sum by (cause) (increase(arena_validator_self_check_failures_total{{{V}}}[1h]))",
                        "failed: {{cause}}",
                    ),
                    target(
                        f"sum by (reason) (increase(arena_validator_refusals_total{{{V}}}[1h]))",
                        "refused: {{reason}}",
                    ),
                ],
            ),
            panel(
                "timeseries",
                "Metagraph age",
                "Seconds since the last successful metagraph sync.",
                [
                    target(
                        f"time() - max by (instance) (arena_metagraph_sync_timestamp_seconds{{{V}}})",
                        "{{instance}}",
                    )
                ],
                "s",
            ),
        ],
        [VALIDATOR],
    )


def build() -> dict[str, Json]:
    """Every dashboard, by file name."""
    boards = [overview(), miners(), judge(), toolserver(), chain()]
    return {f"{board['uid']}.json": board for board in boards}


def render(board: Json) -> str:
    """The file text of one dashboard (stable key order, trailing newline)."""
    return json.dumps(board, indent=2, sort_keys=True) + "\n"


def main() -> int:
    """Write every dashboard into deploy/grafana/dashboards/."""
    OUT.mkdir(exist_ok=True)
    for name, board in build().items():
        (OUT / name).write_text(render(board))
    return 0


if __name__ == "__main__":
    sys.exit(main())
