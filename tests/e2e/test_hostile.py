"""A hostile round: a real validator on the local chain, an honest miner and hostile ones, as processes.

Every hostile episode must be stored and scored (0 where it should be), the honest miner's
scores must equal those of a round without the hostiles (same validator secret, so the same
tasks), the round must end within its deadline plus grace and the time to judge and store, and
the validator's memory must stay bounded.
"""

from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from judging.scores import MinerStanding, ScorePolicy, standings
from storage import repository
from storage.bounds import MAX_STORED_TRAJECTORY_CHARS
from storage.db import make_engine, make_sessionmaker
from storage.records import JudgedTrace
from tests.e2e.loris import SlowLoris, loopback_peers
from tests.e2e.network import LocalNetwork, Process, free_port, metric_value

pytestmark = pytest.mark.slow

SECRET = "hostile-round-" + "s" * 40  # both networks draw the same tasks from it
EPISODE_SECONDS = 20
TASKS_PER_ROUND = 3  # LocalNetwork.validator_env's
HOSTILES = {
    "hostile-surrogate": "tests.e2e.agents:surrogate_agent",
    "hostile-turns": "tests.e2e.agents:ten_thousand_turns_agent",
    "hostile-copy-a": "tests.e2e.agents:copycat_agent",
    "hostile-copy-b": "tests.e2e.agents:copycat_agent",
    "hostile-oversized": "tests.e2e.agents:oversized_agent",
    "hostile-injection": "tests.e2e.agents:injection_agent",
}


def start(net: LocalNetwork, agents: dict[str, str]) -> list[Process]:
    miners = [net.start_miner(name, agent, wait=False) for name, agent in agents.items()]
    for miner in miners:
        miner.wait_healthy(timeout=180)
    return miners


def rss_mib(pid: int) -> float:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    line = next((x for x in status.splitlines() if x.startswith("VmRSS:")), "VmRSS: 0 kB")
    return int(line.split()[1]) / 1024


def run_round(net: LocalNetwork) -> tuple[dict[str, Any], float]:
    """One `arena validator --once --json` round; its report and the validator's peak RSS (MiB)."""
    process = net.start_validator("--once", "--json", token_secret=SECRET, episode_seconds=EPISODE_SECONDS)
    peak, deadline = 0.0, time.monotonic() + 600
    while process.popen.poll() is None:
        assert time.monotonic() < deadline, process.output()[-5000:]
        peak = max(peak, rss_mib(process.popen.pid))
        time.sleep(0.2)
    output = process.output()
    assert process.popen.returncode == 0, output[-5000:]
    report: dict[str, Any] = json.loads(next(x for x in reversed(output.splitlines()) if x.startswith("{")))
    return report, peak


def stored(net: LocalNetwork) -> list[JudgedTrace]:
    engine = make_engine(net.db_url)
    try:
        with make_sessionmaker(engine)() as session:
            return list(repository.iter_judged(session))
    finally:
        engine.dispose()


def credits(net: LocalNetwork) -> dict[str, MinerStanding]:
    """Each hotkey's standing as the weights read it (its mean is its mean credit)."""
    engine = make_engine(net.db_url)
    try:
        with make_sessionmaker(engine)() as session:
            return standings(repository.score_samples(session, window=64), ScorePolicy())
    finally:
        engine.dispose()


def by_task(traces: list[JudgedTrace], hotkey: str) -> dict[str, JudgedTrace]:
    return {t.task.task_id: t for t in traces if t.episode.miner_hotkey == hotkey}


def test_a_hostile_round_stores_and_scores_every_episode_and_leaves_honest_scores_alone(
    tmp_path: Path,
) -> None:
    alone = LocalNetwork(tmp_path / "alone", miners=("miner-good",))
    try:
        start(alone, {"miner-good": "scripted"})
        _, alone_peak = run_round(alone)
        honest_alone = {
            k: t.judgment.score for k, t in by_task(stored(alone), alone.hotkey("miner-good")).items()
        }
    finally:
        alone.stop()
    assert honest_alone and all(score > 0 for score in honest_alone.values())

    net = LocalNetwork(tmp_path / "hostile", miners=("miner-good", *HOSTILES))
    try:
        start(net, {"miner-good": "scripted", **HOSTILES})
        report, peak = run_round(net)
        traces, credit = stored(net), credits(net)
    finally:
        net.stop()

    tasks = set(honest_alone)
    assert report["round"]["stored"] == len(tasks) * (1 + len(HOSTILES)) and report["failed"] == []
    # Deadline + the client's grace, and the time to judge and store what came back.
    assert report["round"]["seconds"] <= EPISODE_SECONDS + 2 + 30
    honest = by_task(traces, net.hotkey("miner-good"))
    assert {k: t.judgment.score for k, t in honest.items()} == honest_alone
    hostile = {name: by_task(traces, net.hotkey(name)) for name in HOSTILES}
    for name, episodes in hostile.items():
        assert set(episodes) == tasks, f"{name}: every hostile episode is stored"

    for trace in hostile["hostile-surrogate"].values():
        assert trace.judgment.score == 0 and trace.episode.end in ("malformed", "miner_error")
    for trace in hostile["hostile-turns"].values():
        assert trace.judgment.score == 0 and "too_many_turns" in trace.judgment.rejects
    for trace in hostile["hostile-oversized"].values():
        assert trace.judgment.score == 0 and "too_long" in trace.judgment.rejects
        assert trace.trajectory is not None
        assert len(json.dumps(trace.trajectory.to_wire(), ensure_ascii=False)) <= MAX_STORED_TRAJECTORY_CHARS
    for trace in hostile["hostile-injection"].values():
        assert trace.judgment.reasoning.injection_flagged
        assert trace.judgment.score < honest[trace.task.task_id].judgment.score
    # The two copies are judged as the work they are, and share its credit: together they earn
    # no more than one of them alone. The honest miner is linked to neither and keeps its own.
    copy_a, copy_b = (hostile[name] for name in ("hostile-copy-a", "hostile-copy-b"))
    for task_id in tasks:
        assert copy_a[task_id].judgment.score == copy_b[task_id].judgment.score
        assert "duplicate_work" not in copy_a[task_id].judgment.rejects + copy_b[task_id].judgment.rejects
    judged = sum(t.judgment.score for t in copy_a.values()) / len(tasks)
    assert judged > 0, "the copies earned credit on some task"
    a, b = (credit[net.hotkey(name)].mean for name in ("hostile-copy-a", "hostile-copy-b"))
    assert a == pytest.approx(b) and a + b <= judged + 1e-9
    assert credit[net.hotkey("miner-good")].mean == pytest.approx(sum(honest_alone.values()) / len(tasks))

    # Memory: the hostile round costs the validator little more than the honest one.
    assert peak < alone_peak + 400, (peak, alone_peak)


LORIS_PEERS = loopback_peers(30)  # 127.0.0.2-31: the honest processes are on 127.0.0.1
ATTACK_SECONDS = 12  # longer than the 10 s head timeout: the flood's sockets are cut and reopened


def honest_traces(net: LocalNetwork) -> list[JudgedTrace]:
    return [t for t in stored(net) if t.episode.miner_hotkey == net.hotkey("miner-good")]


def open_connections(process: Process) -> float:
    """``arena_http_open_connections_size`` of ``process``, asked as an honest peer (patient: a busy host)."""
    text = httpx.get(f"{process.base}/metrics", timeout=60.0).text
    (family,) = [
        f for f in text_string_to_metric_families(text) if f.name == "arena_http_open_connections_size"
    ]
    return sum(sample.value for sample in family.samples)


TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def test_a_slow_loris_on_the_tool_server_and_the_miner_does_not_starve_honest_miners(tmp_path: Path) -> None:
    """3,000 half-open sockets on the validator's port (1,500 on the miner's) from 30 peers, held throughout.

    Each peer may hold 64 pending connections, so the flood fills the 1,024-connection cap on both
    ports (what the server closes is opened again); the honest miner's tool calls (127.0.0.1) and
    the validator's queries to the miner get in by evicting a heavier peer's oldest half-open
    socket, and the honest episodes of two rounds, over at least one head timeout, score as usual.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 8192:
        pytest.skip(f"the flood needs 8192 descriptors (hard limit {hard})")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 8192), hard))  # the processes inherit it
    net = LocalNetwork(tmp_path / "loris", miners=("miner-good",))
    attacks: list[SlowLoris] = []
    try:
        (miner,) = start(net, {"miner-good": "scripted"})
        port = free_port()
        # The flood on the tool server starts before the validator listens, the miner's once the
        # validator is up: a whole round awaited below runs under both.
        attacks.append(SlowLoris(port, 3000, LORIS_PEERS).start())
        validator = net.start_validator(port=port, token_secret=SECRET, round_interval=2, wait=False)
        validator.wait_healthy(timeout=300)
        attacks.append(SlowLoris(miner.port, 1500, LORIS_PEERS).start())
        started, deadline = time.monotonic(), time.monotonic() + 240
        honest: list[JudgedTrace] = honest_traces(net)
        before = len(honest)  # a round under way may have begun before the miner's flood
        held: dict[str, list[float]] = {"validator": [], "miner": []}
        while time.monotonic() < deadline and (
            len(honest) - before < 2 * TASKS_PER_ROUND or time.monotonic() - started < ATTACK_SECONDS
        ):
            time.sleep(1)
            for name, process in (("validator", validator), ("miner", miner)):  # honest calls too
                held[name].append(open_connections(process))
            honest = honest_traces(net)
        seconds, pid = time.monotonic() - started, validator.popen.pid
        cpu, rss = cpu_seconds(pid), rss_mib(pid)
        refused = {
            reason: metric_value(validator.base, "arena_http_refused_connections_total", reason=reason)
            for reason in ("peer_pending", "peer_connections", "max_connections", "evicted", "head_timeout")
        }
    finally:
        for attack in attacks:
            attack.stop()
        net.stop()
    tool_port, miner_port = attacks
    figures = {
        "validator_port": {"held_max": max(held["validator"]), "opened": tool_port.opened},
        "miner_port": {"held_max": max(held["miner"]), "opened": miner_port.opened},
        "refused": refused,
        "attack_s_since_healthy": round(seconds, 1),
        "validator_cpu_s_since_start": round(cpu, 1),
        "validator_rss_mib": round(rss),
        "honest_scores": sorted(round(t.judgment.score, 3) for t in honest),
    }
    print("slow_loris", json.dumps(figures))
    assert min(max(held["validator"]), max(held["miner"])) >= 1000, figures  # both ports held full
    assert refused["evicted"] > 0 and refused["max_connections"] > 0, figures
    assert len(honest) - before >= 2 * TASKS_PER_ROUND, figures  # a whole round under both floods
    for trace in honest:  # scored as usual: every call it made reached the tool server
        assert trace.episode.end == "completed" and trace.judgment.score > 0, figures
        assert trace.trajectory is not None
        calls = [c for m in trace.trajectory.messages if m.tool_calls for c in m.tool_calls]
        assert calls and len(trace.tool_log) == len(calls), figures
        assert all(entry.status == "ok" for entry in trace.tool_log), figures
