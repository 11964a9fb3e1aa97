"""A hostile round: a real validator on the local chain, an honest miner and hostile ones, as processes.

Every hostile episode must be stored and scored (0 where it should be), the honest miner's
scores must equal those of a round without the hostiles (same validator secret, so the same
tasks), the round must end within its deadline plus grace and the time to judge and store, and
the validator's memory must stay bounded.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from storage import repository
from storage.bounds import MAX_STORED_TRAJECTORY_CHARS
from storage.db import make_engine, make_sessionmaker
from storage.records import JudgedTrace
from tests.e2e.network import LocalNetwork, Process

pytestmark = pytest.mark.slow

SECRET = "hostile-round-" + "s" * 40  # both networks draw the same tasks from it
EPISODE_SECONDS = 20
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
        traces = stored(net)
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
    flagged = 0
    for task_id in tasks:
        pair = [hostile["hostile-copy-a"][task_id], hostile["hostile-copy-b"][task_id]]
        copies = [t for t in pair if "duplicate_work" in t.judgment.rejects]
        if any(t.judgment.score > 0 for t in pair) or copies:  # work that earns nothing claims nothing
            assert len(copies) == 1 and copies[0].judgment.score == 0, "identical work is credited once"
            (original,) = [t for t in pair if t is not copies[0]]
            assert original.judgment.score > 0
            flagged += 1
    assert flagged, "the copies earned credit on some task, once"

    # Memory: the hostile round costs the validator little more than the honest one.
    assert peak < alone_peak + 400, (peak, alone_peak)


@pytest.mark.xfail(
    reason="issue 14 item 11 is only half done: with the bounds in (neurons/serving.py) the server stays "
    "up, but 2,000 half-open sockets fill the 1,024-connection cap until the 10 s head timeout frees them, "
    "and an honest episode in that window gets 503s and scores 0 (run 2026-12-02): per-peer limits needed",
    strict=False,
)
def test_a_slow_loris_on_the_tool_server_does_not_starve_honest_miners(tmp_path: Path) -> None:
    net = LocalNetwork(tmp_path / "loris", miners=("miner-good",))
    sockets: list[socket.socket] = []
    try:
        start(net, {"miner-good": "scripted"})
        validator = net.start_validator(token_secret=SECRET, round_interval=2)
        for _ in range(2000):  # half-open requests: a header line, never the rest
            sock = socket.create_connection(("127.0.0.1", validator.port), timeout=5)
            sock.sendall(b"POST /v1/tools/find_product HTTP/1.1\r\nHost: x\r\n")
            sockets.append(sock)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not stored(net):
            time.sleep(1)
        honest = by_task(stored(net), net.hotkey("miner-good"))
        assert honest and all(t.judgment.score > 0 for t in honest.values())
    finally:
        for sock in sockets:
            sock.close()
        net.stop()
