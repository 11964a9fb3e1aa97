"""Prometheus metric objects for validator and miner (the one tolerated module-level state).

Names follow ``arena_<noun>_<unit>``. Label sets are bounded: never a hotkey on a high-volume
series; ``uid`` (at most 256 values per subnet) only on per-miner gauges.

Several uvicorn workers: set ``PROMETHEUS_MULTIPROC_DIR`` to an empty directory before the
processes start; ``render_latest()`` then aggregates every worker's samples. Gauges declare how
they aggregate across processes (``multiprocess_mode``); in single-process mode that is ignored.
"""

from __future__ import annotations

import os

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

_FAST = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
_SLOW = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)

# ---------------------------------------------------------------- build
BUILD_INFO = Gauge(
    "arena_build_info",
    "Constant 1, labelled with the running version, role and protocol version.",
    ["version", "role", "protocol"],
    multiprocess_mode="max",
)

# ---------------------------------------------------------------- rounds and episodes
ROUNDS = Counter("arena_rounds_total", "Rounds completed by the validator.", ["result"])
ROUND_DURATION = Histogram("arena_round_duration_seconds", "Wall time of one round.", buckets=_SLOW)
EPISODES = Counter("arena_episodes_total", "Episodes finished, by how they ended.", ["end"])

# ---------------------------------------------------------------- worlds
WORLD_COMPILE_DURATION = Histogram(
    "arena_world_compile_seconds",
    "Time to make a round's world pack ready: compiled from its seed, or loaded and verified from the cache.",
    ["source"],
    buckets=_SLOW,
)
WORLD_START_BLOCK = Gauge(
    "arena_world_start_block",
    "Start block of the world the validator's rounds serve (a new value: a new world); 0 before the first.",
    multiprocess_mode="max",
)
WORLD_INFO = Gauge(
    "arena_world_info",
    "Constant 1, labelled with the world the validator serves now (one series: the old one is dropped).",
    ["world_id", "pack_hash"],
    multiprocess_mode="mostrecent",
)
SHOPPER_QUESTIONS = Histogram(
    "arena_shopper_questions_per_episode",
    "Shopper questions per episode judged with a shopper profile, as the judge counted them.",
    buckets=(0, 1, 2, 3, 5, 8, 13),
)

# ---------------------------------------------------------------- tool server
TOOL_CALLS = Counter("arena_tool_calls_total", "Tool calls executed, by tool and status.", ["tool", "status"])
TOOL_CALL_DURATION = Histogram(
    "arena_tool_call_duration_seconds", "Time to execute one tool call.", ["tool"], buckets=_FAST
)
TOOLSERVER_REQUESTS = Counter(
    "arena_toolserver_requests_total", "Tool server HTTP requests, by status code.", ["code"]
)
GATEWAY_EXCHANGES = Counter(
    "arena_gateway_exchanges_total",
    "Requests through the inference gateway, by result (ok, refused, upstream_error, gateway_error).",
    ["result"],
)
ATTESTED_CALLS = Counter(
    "arena_attested_tool_calls_total", "Tool calls attested by the inference gateway's completions."
)

# ---------------------------------------------------------------- public ports (neurons.serving)
HTTP_REFUSED_CONNECTIONS = Counter(
    "arena_http_refused_connections_total",
    "Connections a public port refused at accept time or cut off, by reason (peer_pending, "
    "peer_connections, max_connections, evicted, head_timeout, body_timeout, head_too_large).",
    ["reason"],
)
HTTP_OPEN_CONNECTIONS = Gauge(
    "arena_http_open_connections_size",
    "Connections the public port holds open now (its cap: ARENA_SERVING__MAX_CONNECTIONS).",
    multiprocess_mode="livesum",
)

# ---------------------------------------------------------------- the RL environment (`arena env serve`)
ENV_STEPS = Counter("arena_env_steps_total", "Environment steps, by result (ok, error, refused).", ["result"])
ENV_EPISODES = Counter("arena_env_episodes_total", "Environment episodes finished, by end.", ["end"])

# ---------------------------------------------------------------- judging
JUDGMENTS = Counter("arena_judgments_total", "Judgments made, by verdict and axis.", ["verdict", "axis"])
JUDGE_DURATION = Histogram(
    "arena_judge_duration_seconds", "Time to judge one trajectory (rules and LLM).", buckets=_SLOW
)
JUDGE_UNSCORED = Counter("arena_judge_unscored_total", "Reasoning checks left unscored, by cause.", ["cause"])
DUPLICATE_EPISODES = Counter(
    "arena_duplicate_episodes_total",
    "Episodes whose work (calls and answer on the task) another hotkey brought first this round (scored 0).",
)
JUDGE_REFUSALS = Counter(
    "arena_judge_refusals_total",
    "Reasoning judge requests refused with a 4xx (our fault to fix; the episodes stay in the weights).",
)

# ---------------------------------------------------------------- miners and weights
MINER_SCORE = Gauge(
    "arena_miner_score", "Windowed lower-bound score per miner uid.", ["uid"], multiprocess_mode="mostrecent"
)
MINER_WEIGHT = Gauge(
    "arena_miner_weight", "Last submitted weight per uid.", ["uid"], multiprocess_mode="mostrecent"
)
WEIGHT_SUBMISSIONS = Counter(
    "arena_weight_submissions_total", "set_weights submissions, by result.", ["result"]
)
WEIGHTS_LAST_SUCCESS_BLOCK = Gauge(
    "arena_weights_last_success_block",
    "Block by which our last weights were on chain (set, or a commit's reveal verified).",
    multiprocess_mode="max",
)
WEIGHT_REVEALS = Counter(
    "arena_weight_reveals_total",
    "Timelocked weight commits checked after their reveal round, by result (revealed, missing).",
    ["result"],
)
CHAIN_BLOCK = Gauge("arena_chain_block", "Latest block seen on chain.", multiprocess_mode="max")
METAGRAPH_SYNC_TIMESTAMP = Gauge(
    "arena_metagraph_sync_timestamp_seconds",
    "Unix time of the last successful metagraph sync (age = time() - this).",
    multiprocess_mode="max",
)
SELF_CHECK_OK = Gauge(
    "arena_validator_self_check_ok",
    "1 while the validator's self-check passes (registered, permit or owner, chain reachable, clock).",
    multiprocess_mode="mostrecent",
)
SELF_CHECK_FAILURES = Counter(
    "arena_validator_self_check_failures_total", "Failed validator self-checks, by cause.", ["cause"]
)
VALIDATOR_REFUSALS = Counter(
    "arena_validator_refusals_total",
    "Miners' refusals the round holds: naming the validator's own state (no_permit, unknown_hotkey, "
    "stale, wrong_receiver) or the miner's view of the chain (metagraph_expired, metagraph_unavailable).",
    ["reason"],
)
CHAIN_ERRORS = Counter("arena_chain_errors_total", "Failed chain calls, by call.", ["call"])

# ---------------------------------------------------------------- validator -> miner requests
MINER_REQUEST_DURATION = Histogram(
    "arena_miner_request_duration_seconds", "Validator-to-miner request wall time.", buckets=_SLOW
)
MINER_REQUEST_FAILURES = Counter(
    "arena_miner_request_failures_total",
    "Validator-to-miner request failures, by kind (timeout, too_large, bad_signature...).",
    ["kind"],
)
MINER_ENDPOINT_REFUSALS = Counter(
    "arena_miner_endpoint_refusals_total",
    "Miners left out of a round because their advertised address is not global, by cause.",
    ["cause"],
)

# ---------------------------------------------------------------- storage and tasks
DB_WRITE_DURATION = Histogram(
    "arena_db_write_duration_seconds", "Time of one database write transaction.", ["op"], buckets=_FAST
)
DB_ERRORS = Counter("arena_db_errors_total", "Database errors, by operation.", ["op"])
TASK_POOL_SIZE = Gauge("arena_task_pool_size", "Tasks per pool.", ["pool"], multiprocess_mode="mostrecent")
CURATION_ROWS = Gauge(
    "arena_curation_rows",
    "Rows in and out of each curation funnel stage at the last export.",
    ["stage", "direction"],
    multiprocess_mode="mostrecent",
)
JOB_FAILURES = Counter("arena_job_failures_total", "Scheduler job runs that raised.", ["job_name"])

# ---------------------------------------------------------------- miner side
MINER_TASKS = Counter("arena_miner_tasks_total", "Tasks received by the miner, by result.", ["result"])
MINER_TASK_DURATION = Histogram(
    "arena_miner_task_duration_seconds", "Time the miner's agent took per task.", buckets=_SLOW
)
MINER_AUTH_FAILURES = Counter(
    "arena_miner_auth_failures_total", "Requests the miner refused, by reason.", ["reason"]
)


def render_latest() -> tuple[bytes, str]:
    """Render every metric in the text exposition format, aggregating workers in multiprocess mode."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
