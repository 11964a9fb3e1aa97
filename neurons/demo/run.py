"""The demo run: set up the local network, start the LLM and the neurons, run the rounds, summarise, stop.

The validator runs once per round (``arena validator --once``: task rotation, one round, one
weights pass and the export, then exit), so each round is followed by exactly one weights
submission; the local chain runs commit-reveal as finney does, so the demo then waits for the
last commit to be revealed at its drand round, and the weights on chain reflect exactly the
rounds reported. The miners and the local model serve throughout. Everything started is
stopped on the way out, on success, on error and on Ctrl-C.
"""

from __future__ import annotations

import hashlib
import json
import logging
import subprocess
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from pydantic import SecretStr

from neurons.demo.config import GIVE_UP, LLM, SCRIPTED, DemoConfig, DemoResult
from neurons.demo.local_llm import LocalLLM, LocalLLMError
from neurons.demo.network import (
    NETUID,
    DemoError,
    DemoInputError,
    Layout,
    Member,
    NeuronProcess,
    Processes,
    create_chain,
    free_port,
    prepare_catalog,
    wait_for_next_world,
    wait_for_reveals,
)
from neurons.demo.summary import (
    DemoMiner,
    chain_weights,
    export_counts,
    load_traces,
    summarize,
)

logger = logging.getLogger(__name__)

LOCAL_MODEL_AGENT = "neurons.demo.agents:local_model_agent"
GIVE_UP_AGENT = "neurons.demo.agents:give_up_agent"
# The validator's start-up, task generation and judging, on top of the episode budget.
ROUND_OVERHEAD_S = 180.0
# Commit to reveal is one epoch and at most two: 10 to 20 s at the demo's tempo of 10 one-second blocks.
REVEAL_TIMEOUT = 120.0

Say = Callable[[str], None]


@dataclass(frozen=True)
class MinerPlan:
    """A miner to register and start: wallet name, agent kind and spec, extra settings."""

    name: str
    kind: str
    agent: str
    env: dict[str, str]


def discover_model(base_url: str, api_key: SecretStr | None) -> str:
    """The first model an OpenAI-compatible endpoint lists (``GET <base_url>/models``).

    Raises:
        DemoInputError: the endpoint does not answer or lists no model.
    """
    headers = {"Authorization": f"Bearer {api_key.get_secret_value()}"} if api_key else {}
    try:
        response = httpx.get(f"{base_url.rstrip('/')}/models", headers=headers, timeout=10.0)
        response.raise_for_status()
        models = [str(entry["id"]) for entry in response.json().get("data", [])]
    except (httpx.HTTPError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise DemoInputError(f"cannot list the models of {base_url}: {exc}") from exc
    if not models:
        raise DemoInputError(f"{base_url} lists no model; name one with --llm-model / --judge-model")
    return models[0]


def plan_miners(config: DemoConfig, llm_url: str | None, llm_model: str | None) -> list[MinerPlan]:
    """The miners to run: ``miners_per_agent`` of each kind, named ``<kind>-<n>``."""
    plans = []
    for number in range(1, config.miners_per_agent + 1):
        for kind in config.kinds():
            env: dict[str, str] = {}
            agent = {SCRIPTED: "scripted", GIVE_UP: GIVE_UP_AGENT}.get(kind, "")
            if kind == LLM:
                agent = LOCAL_MODEL_AGENT if config.embedded_llm() else "llm"
                env = {
                    "ARENA_LLM_BASE_URL": llm_url or "",
                    "ARENA_LLM_MODEL": llm_model or "",
                    "ARENA_APP__MAX_STEPS": str(config.max_steps),
                }
                if config.llm_api_key is not None:
                    env["ARENA_LLM_API_KEY"] = config.llm_api_key.get_secret_value()
            plans.append(MinerPlan(f"{kind.replace('_', '-')}-{number}", kind, agent, env))
    return plans


def _fresh(workdir: Path) -> None:
    if workdir.exists() and (not workdir.is_dir() or any(workdir.iterdir())):
        raise DemoInputError(f"{workdir} is not an empty directory: the demo needs a fresh work dir")
    workdir.mkdir(parents=True, exist_ok=True)


def _local_args(layout: Layout, wallet: str) -> list[str]:
    return [
        "--network", "local", "--local-chain", str(layout.chain), "--netuid", str(NETUID),
        "--wallet-name", wallet, "--wallet-path", str(layout.wallets),
    ]  # fmt: skip


def start_miners(layout: Layout, processes: Processes, plans: list[MinerPlan]) -> list[NeuronProcess]:
    """Start every miner (each serves its endpoint on chain first) and wait until all answer /health."""
    started = []
    for plan in plans:
        port = free_port()
        args = ["miner", *_local_args(layout, plan.name), "--agent", plan.agent]
        args += ["--host", "127.0.0.1", "--port", str(port)]
        started.append(
            processes.start(plan.name, args, port=port, env={"ARENA_LOG_LEVEL": "INFO", **plan.env})
        )
    for process in started:
        process.wait_healthy()
    return started


# Blocks per world on the demo's chain (one block a second): rounds minutes apart get a new world each.
WORLD_PERIOD, WORLD_DELAY = 10, 2
WORLD_WAIT_S = 60.0  # for the next world after the validator first commits its round secret


def validator_env(layout: Layout, config: DemoConfig) -> dict[str, str]:
    """The validator's ``ARENA_*`` settings: small pools and budgets, weights after every round."""
    settings: dict[str, Any] = {
        "DATA_DIR": layout.data_dir,
        "INDEX": layout.index,
        "EXPORT_DIR": layout.export,
        "ROUND__TASKS_PER_ROUND": config.tasks_per_round,
        "ROUND__MINERS_PER_ROUND": 0,
        "ROUND__EPISODE_SECONDS": config.episode_budget(),
        "ROUND__MAX_TOOL_CALLS": 20,
        "POOL__MIN_HELD_OUT": max(12, 2 * config.tasks_per_round),
        "POOL__BATCH": max(30, 4 * config.tasks_per_round),
        "WEIGHTS_MIN_BLOCKS": 1,
        "WORLD__ENABLED": config.worlds,
        "WORLD__PERIOD_BLOCKS": WORLD_PERIOD,
        "WORLD__DELAY_BLOCKS": WORLD_DELAY,
        # The embedded model listens on loopback: the inference gateway may forward there (the
        # LLM miners' calls are then attested, axis A-attested); elsewhere it is refused.
        "GATEWAY__UPSTREAM_NETWORKS": json.dumps(["127.0.0.0/8"]),
        "LOG_LEVEL": "INFO",
        # Derived from the seed: the same seed and catalog give the same tasks in the same rounds.
        "TOKEN_SECRET": hashlib.sha256(f"arena-demo/{config.seed}".encode()).hexdigest(),
    }
    if config.judge_api_key is not None:
        settings["JUDGE__API_KEY"] = config.judge_api_key.get_secret_value()
    return {f"ARENA_{key}": str(value) for key, value in settings.items()}


def run_validator_round(
    layout: Layout,
    processes: Processes,
    config: DemoConfig,
    *,
    number: int,
    port: int,
    judge: tuple[str, str] | None,
) -> dict[str, Any]:
    """Run ``arena validator --once --json`` for one round; its report (round, weights, failed jobs).

    Raises:
        DemoError: the validator did not finish in time, printed no report, or ran no round.
    """
    args = ["validator", *_local_args(layout, "validator"), "--host", "127.0.0.1", "--port", str(port)]
    args += ["--once", "--json"]
    if judge is not None:
        args += ["--judge-url", judge[0], "--judge-model", judge[1]]
    report_path = layout.logs / f"validator-round-{number}.json"
    process = processes.start(
        f"validator-round-{number}", args, port=port, env=validator_env(layout, config), stdout=report_path
    )
    timeout = config.episode_budget() + ROUND_OVERHEAD_S
    try:
        code = process.popen.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise DemoError(f"round {number}: the validator did not finish within {timeout:.0f}s") from None
    lines = [line for line in report_path.read_text().splitlines() if line.startswith("{")]
    if not lines:
        raise DemoError(f"round {number}: the validator exited with {code} and no report:\n{process.tail()}")
    report: dict[str, Any] = json.loads(lines[-1])
    if report.get("round") is None or "round" in report["failed"]:
        raise DemoError(f"round {number}: no round ran (failed jobs: {report['failed']}):\n{process.tail()}")
    return report


def _check_alive(miners: list[NeuronProcess]) -> None:
    """Stop before a round rather than let the validator score a crashed miner 0."""
    for miner in miners:
        if miner.popen.poll() is not None:
            raise DemoError(f"miner {miner.name} exited with code {miner.popen.returncode}:\n{miner.tail()}")


def _round_line(number: int, total: int, report: dict[str, Any], seconds: float) -> str:
    summary, weights = report["round"], report.get("weights") or {}
    ends = ", ".join(f"{end} {count}" for end, count in sorted(summary.get("ends", {}).items()))
    submitted = weights.get("result") == "submitted" and weights.get("success")
    done = f"set at block {weights.get('block')}"
    if submitted and weights.get("reveal_round"):
        done = f"committed at block {weights.get('block')} (reveal round {weights['reveal_round']})"
    world = summary.get("world")
    where = f" on world {world['world_id']} ({world['source']})" if world else " on static tasks"
    line = (
        f"round {number}/{total}{where}: {summary.get('stored', 0)} episodes judged and stored ({ends}), "
        f"{summary.get('successes', 0)} successes; weights "
        + (done if submitted else f"not set ({weights.get('result')})")
    )
    if report["failed"]:
        line += f"; failed jobs: {', '.join(report['failed'])}"
    return f"{line} [{seconds:.1f} s]"


def run_demo(config: DemoConfig, say: Say) -> DemoResult:
    """Run the whole demo; every process it starts is stopped before it returns or raises.

    Args:
        config: what to run.
        say: where progress lines go (the command prints them on stderr).

    Raises:
        DemoInputError: a work dir that is not fresh, an endpoint that does not answer.
        DemoError: a part that did not start or finish.
        LocalLLMError: the embedded model is not installed or did not start.
    """
    if config.rounds < 1 or config.miners_per_agent < 1:
        raise DemoInputError("--rounds and --miners-per-agent must be at least 1")
    started = time.monotonic()
    seconds: dict[str, Any] = {}
    layout = Layout(config.workdir)
    _fresh(layout.root)
    judge = None
    if config.judge_url:
        judge = (
            config.judge_url,
            config.judge_model or discover_model(config.judge_url, config.judge_api_key),
        )
    llm_url, llm_model = config.llm_base_url, config.llm_model
    if config.llm and llm_url and not llm_model:
        llm_model = discover_model(llm_url, config.llm_api_key)

    names = [plan.name for plan in plan_miners(config, None, None)]
    members = create_chain(layout, names)
    count = prepare_catalog(layout, products=config.products, seed=config.seed, catalog=config.catalog)
    seconds["setup"] = round(time.monotonic() - started, 2)
    say(
        f"local chain {layout.chain}: validator uid {members['validator'].uid}, "
        f"{len(names)} miners; {count} products indexed [{seconds['setup']:.1f} s]"
    )
    processes = Processes(layout.logs)
    with ExitStack() as stack:
        stack.callback(processes.stop_all)
        if config.embedded_llm():
            mark = time.monotonic()
            say("starting the local model (SmolLM2-135M-Instruct, llama-cpp-python)")
            model = stack.enter_context(LocalLLM(log_path=_log(layout, "llm")))
            llm_url, llm_model = model.base_url, model.model
            seconds["llm_start"] = round(time.monotonic() - mark, 2)
            say(f"local model ready at {llm_url} [{seconds['llm_start']:.1f} s]")
        mark = time.monotonic()
        plans = plan_miners(config, llm_url, llm_model)
        miner_processes = start_miners(layout, processes, plans)
        seconds["miners_start"] = round(time.monotonic() - mark, 2)
        serving = ", ".join(plan.name for plan in plans)
        say(f"{len(plans)} miners serving: {serving} [{seconds['miners_start']:.1f} s]")
        port = free_port()
        seconds["rounds"] = []
        worlds: list[dict[str, Any]] = []
        for number in range(1, config.rounds + 1):
            mark = time.monotonic()
            say(f"round {number}/{config.rounds}: validator running")
            _check_alive(miner_processes)
            report = run_validator_round(layout, processes, config, number=number, port=port, judge=judge)
            # A first start: the validator's round secret goes on chain now, and serves the next world.
            if report["round"].get("result") == "no_commitment":
                say(f"round {number}/{config.rounds}: round secret committed; waiting for the next world")
                wait_for_next_world(
                    layout.chain, period=WORLD_PERIOD, delay=WORLD_DELAY, timeout=WORLD_WAIT_S
                )
                report = run_validator_round(layout, processes, config, number=number, port=port, judge=judge)
            seconds["rounds"].append(round(time.monotonic() - mark, 2))
            say(_round_line(number, config.rounds, report, seconds["rounds"][-1]))
            if report["round"].get("world") is not None:
                world = report["round"]["world"]  # its "round" is the world's index on the chain
                worlds.append({**world, "round": number, "world_round": world["round"]})
    if "export" in report["failed"] or not (layout.export / "manifest.json").is_file():
        raise DemoError(f"the validator's export job wrote no export into {layout.export}; see its log")
    mark = time.monotonic()
    say("waiting for the last weight commit to be revealed at its drand round")
    last = wait_for_reveals(layout.chain, timeout=REVEAL_TIMEOUT)
    seconds["reveal"] = round(time.monotonic() - mark, 2)
    if last is not None:
        outcome = f"revealed at block {last.revealed_block}" if last.status == "revealed" else last.error
        say(f"weights {outcome} [{seconds['reveal']:.1f} s]")
    kinds = {plan.name: plan.kind for plan in plans}
    miners = [DemoMiner(members[n].hotkey, members[n].uid, kinds[n]) for n in names]
    rows = summarize(
        load_traces(layout.database_url), miners, chain_weights(layout.chain, members["validator"].uid)
    )
    seconds["total"] = round(time.monotonic() - started, 2)
    return DemoResult(
        miners=rows,
        rounds=config.rounds,
        database=layout.database_url,
        export=layout.export,
        workdir=layout.root,
        chain=layout.chain,
        llm=llm_url if config.llm else None,
        judge=judge[0] if judge else None,
        seconds=seconds,
        exports=export_counts(layout.export),
        worlds=worlds,
    )


def _log(layout: Layout, name: str) -> Path:
    layout.logs.mkdir(parents=True, exist_ok=True)
    return layout.logs / f"{name}.log"


__all__ = ["DemoConfig", "DemoError", "DemoResult", "LocalLLMError", "Member", "run_demo"]
