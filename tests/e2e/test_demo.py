"""`arena demo` end to end: the local network as real processes, its JSON, database, export and weights."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from neurons.chain.local.state import read_weights
from neurons.demo.local_llm import server_available
from neurons.demo.summary import chain_weights, load_traces

ROOT = Path(__file__).resolve().parents[2]
MINER_KEYS = {"hotkey", "uid", "agent", "tasks", "successes", "mean_score", "axis", "weight"}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def run_demo(workdir: Path, *args: str, timeout: float) -> tuple[dict[str, Any], str]:
    """Run `arena demo --json`; its one JSON object and its stderr."""
    command = [sys.executable, "-m", "neurons.cli", "demo", "--json", "--workdir", str(workdir), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=_env(), cwd=ROOT)
    assert done.returncode == 0, done.stderr[-5000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 1, f"stdout is not exactly one JSON line:\n{done.stdout[-3000:]}"
    report: dict[str, Any] = json.loads(lines[0])
    return report, done.stderr


def check_report(report: dict[str, Any], workdir: Path, *, rounds: int, agents: set[str], tasks: int) -> None:
    """The JSON contract, the database behind it, the export, and the weights on chain."""
    assert report["rounds"] == rounds
    assert report["database"] == f"sqlite:///{workdir / 'validator' / 'validator.db'}"
    assert all(set(miner) == MINER_KEYS for miner in report["miners"])
    assert {miner["agent"] for miner in report["miners"]} == agents
    assert len({miner["uid"] for miner in report["miners"]}) == len(report["miners"])

    traces = load_traces(report["database"])
    per_hotkey = Counter(trace.episode.miner_hotkey for trace in traces)
    for miner in report["miners"]:
        assert miner["tasks"] == per_hotkey[miner["hotkey"]] == tasks * rounds, miner
        own = [t for t in traces if t.episode.miner_hotkey == miner["hotkey"]]
        assert miner["successes"] == sum(t.judgment.success for t in own)
        assert miner["mean_score"] == pytest.approx(sum(t.judgment.score for t in own) / len(own), abs=1e-4)
        assert all(t.episode.miner_uid == miner["uid"] for t in own)

    export = Path(report["export"])
    assert export == workdir / "export"
    for name in ("manifest.json", "funnel.json", "README.md", "sft.jsonl", "kto.jsonl", "dpo.jsonl"):
        assert (export / name).is_file(), f"{name} missing from the export"
    funnel = json.loads((export / "funnel.json").read_text())
    assert funnel["stages"]["normalise"]["in"] == len(traces)
    for name, count in report["exports"].items():  # rows by origin, as funnel.json counts them
        assert count["rows"] == count["native"] + count["converted"] == sum(funnel["exports"][name].values())

    setters = read_weights(workdir / "chain.db")
    assert len(setters) == 1, "the validator, and only it, set weights"
    on_chain = chain_weights(workdir / "chain.db", next(iter(setters)))
    for miner in report["miners"]:
        assert miner["weight"] == pytest.approx(on_chain.get(miner["uid"], 0.0), abs=1e-4)


def test_the_demo_without_a_model_runs_a_round_and_the_solver_outweighs_the_quitter(tmp_path: Path) -> None:
    workdir = tmp_path / "demo"
    report, stderr = run_demo(workdir, "--no-llm", "--rounds", "1", "--tasks-per-round", "3", timeout=300)

    check_report(report, workdir, rounds=1, agents={"scripted", "give_up"}, tasks=3)
    miners = {miner["agent"]: miner for miner in report["miners"]}
    assert miners["give_up"]["mean_score"] == 0 and miners["give_up"]["successes"] == 0
    assert miners["scripted"]["mean_score"] > 0
    assert miners["scripted"]["weight"] > miners["give_up"]["weight"]
    assert "round 1/1" in stderr and report["llm"] is None
    [world] = report["worlds"]  # the round ran on a chain-seeded world, and the summary names it
    assert world["round"] == 1 and world["world_id"].startswith("w-") and len(world["pack_hash"]) == 64
    assert f"round 1/1 on world {world['world_id']}" in stderr
    traces = load_traces(report["database"])
    assert {(t.episode.world_id, t.episode.pack_hash) for t in traces} == {
        (world["world_id"], world["pack_hash"])
    }


def test_the_demo_refuses_a_work_dir_that_is_not_fresh(tmp_path: Path) -> None:
    (tmp_path / "old").write_text("x")
    command = [sys.executable, "-m", "neurons.cli", "demo", "--no-llm", "--workdir", str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env=_env(), cwd=ROOT)
    assert done.returncode == 2 and "not an empty directory" in done.stderr
    assert done.stdout == ""


def test_ctrl_c_stops_every_process_the_demo_started(tmp_path: Path) -> None:
    workdir = tmp_path / "demo"
    command = [
        sys.executable,
        "-m",
        "neurons.cli",
        "demo",
        "--no-llm",
        "--rounds",
        "50",
        "--workdir",
        str(workdir),
    ]
    demo = subprocess.Popen(command, env=_env(), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        pids = _wait_for_neurons(workdir, demo, count=3)  # two miners and a validator round
        demo.send_signal(signal.SIGINT)
        _, stderr = demo.communicate(timeout=60)
    finally:
        if demo.poll() is None:
            demo.kill()
    assert demo.returncode == 130, stderr.decode()[-3000:]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.2)
    assert not [pid for pid in pids if _alive(pid)], "orphan processes left behind"
    assert not [pid for pid in _children_with(str(workdir)) if _alive(pid)], "a neuron started later survived"


def _wait_for_neurons(workdir: Path, demo: subprocess.Popen[bytes], count: int) -> list[int]:
    """The pids of the demo's neuron processes, once ``count`` of them run (read from /proc)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert demo.poll() is None, "the demo exited early"
        pids = _children_with(str(workdir))
        if len(pids) >= count:
            return pids
        time.sleep(0.2)
    raise AssertionError("the demo's neurons did not start")


def _children_with(marker: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"neurons.cli" in argv and any(marker.encode() in arg for arg in argv) and b"demo" not in argv:
            pids.append(int(entry.name))
    return pids


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.local_llm
@pytest.mark.skipif(
    not server_available(), reason="the local model is not installed (make install-local-llm)"
)
def test_the_full_demo_with_the_local_model(tmp_path: Path) -> None:
    workdir = tmp_path / "demo"
    report, stderr = run_demo(workdir, "--rounds", "1", timeout=900)

    check_report(report, workdir, rounds=1, agents={"scripted", "llm", "give_up"}, tasks=2)
    assert report["llm"] and report["llm"].startswith("http://127.0.0.1:")
    assert "local model ready" in stderr
    llm = next(miner for miner in report["miners"] if miner["agent"] == "llm")
    traces = [t for t in load_traces(report["database"]) if t.episode.miner_hotkey == llm["hotkey"]]
    # The model's episodes ran on the validator's tool server: every one has a trajectory whose
    # tool calls the validator logged.
    assert all(t.trajectory is not None and t.tool_log for t in traces)
    miners = {miner["agent"]: miner for miner in report["miners"]}
    assert miners["scripted"]["weight"] > miners["give_up"]["weight"]
