"""`arena miner`: flags, exit codes, and the real process (two workers) on the local chain."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from neurons.chain.signing import sign_request
from neurons.cli import app
from neurons.protocol import TASKS_PATH
from neurons.validator.miner_client import MinerClient
from tests.neurons.conftest import NETUID, LocalNet
from tests.neurons.standins import free_socket, task_request

ROOT = Path(__file__).resolve().parents[3]
ARENA = Path(sys.executable).parent / "arena"


def test_help_shows_an_example() -> None:
    result = CliRunner().invoke(app, ["miner", "--help"])
    assert result.exit_code == 0
    assert "Example: arena miner" in result.output


@pytest.mark.usefixtures("no_arena_env")
@pytest.mark.parametrize(
    "args",
    [
        ["--network", "nowhere", "--netuid", "1"],
        ["--network", "finney"],  # no netuid
        ["--network", "local", "--netuid", "1"],  # no chain file
        ["--netuid", "1", "--host", "10.0.0.1", "--agent", "llm"],  # llm without endpoint
    ],
)
def test_bad_flags_exit_2(args: list[str]) -> None:
    result = CliRunner().invoke(app, ["miner", *args])
    assert result.exit_code == 2
    assert "invalid miner settings" in result.output


def test_miner_process_with_two_workers_answers_and_refuses_replays(net: LocalNet, tmp_path: Path) -> None:
    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()
    (tmp_path / "metrics").mkdir()
    env = {name: value for name, value in os.environ.items() if not name.startswith("ARENA_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["PROMETHEUS_MULTIPROC_DIR"] = str(tmp_path / "metrics")
    env["ARENA_NONCE_DB"] = str(tmp_path / "nonces.db")
    command = [
        str(ARENA),
        "miner",
        "--network",
        "local",
        "--local-chain",
        str(net.path),
        "--netuid",
        str(NETUID),
        "--wallet-name",
        "miner1",
        "--wallet-path",
        str(net.wallets_dir),
        "--agent",
        "tests.neurons.standins:noop_agent",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "2",
    ]
    process = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_healthy(base, process)
        import asyncio

        asyncio.run(_query_and_replay(net, base))
        exposition = httpx.get(f"{base}/metrics").text
        assert 'arena_miner_tasks_total{result="completed"} 2.0' in exposition
        assert 'arena_miner_auth_failures_total{reason="replay"} 1.0' in exposition
        assert "arena_build_info{" in exposition
    finally:
        process.terminate()
        output = process.communicate(timeout=30)[0].decode()
    assert process.returncode == 0, output
    assert "endpoint_served" in output


async def _query_and_replay(net: LocalNet, base: str) -> None:
    snapshot = await net.chain("validator").snapshot()
    neuron = snapshot.by_hotkey(net.hotkey("miner1"))
    assert neuron is not None and neuron.endpoint == base  # served on chain at start-up

    async with MinerClient(net.wallets["validator"]) as client:
        reply = await client.query(neuron, task_request())
    assert reply.end == "completed", reply.detail

    body = task_request(episode_id="ep-replay").to_bytes()
    headers = sign_request(
        net.wallets["validator"], method="POST", path=TASKS_PATH, body=body, receiver=neuron.hotkey
    )
    statuses = []
    for _ in range(2):  # a fresh connection each time, so either worker may answer
        async with httpx.AsyncClient() as http:
            answer = await http.post(f"{base}{TASKS_PATH}", content=body, headers=headers)
            statuses.append((answer.status_code, answer.json().get("reason")))
    assert statuses[0][0] == 200
    assert statuses[1] == (401, "replay")


def _wait_healthy(base: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(process.communicate()[0].decode())
        try:
            if httpx.get(f"{base}/health", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError("miner did not become healthy in 60 s")
