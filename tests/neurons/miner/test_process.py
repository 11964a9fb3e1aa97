"""The miner process on loopback: settings -> app -> served on chain -> queried by the validator's client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI

from arena.index import SearchIndex
from neurons.errors import EndpointRefused
from neurons.miner import process as miner_process
from neurons.miner.process import WORKER_SETTINGS_ENV, build_app, serve_endpoint, worker_app
from neurons.miner.settings import MinerSettings
from neurons.validator.miner_client import MinerClient
from tests.neurons.conftest import NETUID, LocalNet
from tests.neurons.standins import ToolWorld, free_socket, serve_app


def settings_for(net: LocalNet, name: str, **changes: Any) -> MinerSettings:
    values: dict[str, Any] = {
        "network": "local",
        "netuid": NETUID,
        "local_chain": net.path,
        "wallet_name": name,
        "wallet_path": net.wallets_dir,
        "host": "127.0.0.1",
        "agent": "tests.neurons.standins:tool_agent",
    }
    values.update(changes)
    return MinerSettings(_env_file=None, **values)  # type: ignore[call-arg]


async def test_scripted_miner_solves_a_task_through_the_real_tool_server(
    net: LocalNet, fixture_index: SearchIndex
) -> None:
    world = ToolWorld(fixture_index)
    sock = free_socket()
    settings = settings_for(net, "miner1", port=sock.getsockname()[1], agent="scripted")

    await serve_endpoint(settings)
    snapshot = await net.chain("validator").snapshot()
    neuron = snapshot.by_hotkey(net.hotkey("miner1"))
    assert neuron is not None and neuron.endpoint == f"http://127.0.0.1:{settings.port}"

    async with serve_app(world.app()) as tools_url, serve_app(build_app(settings), sock):
        request = world.request(neuron.hotkey, tool_server_url=tools_url, query="Nike running shoes for men")
        async with MinerClient(net.wallets["validator"]) as client:
            reply = await client.query(neuron, request)

    assert reply.end == "completed", reply.detail
    trajectory = reply.trajectory
    assert trajectory is not None and trajectory.miner_hotkey == net.hotkey("miner1")
    # Every tool call the trajectory reports is in the tool server's own log, with the same result.
    log = world.log(request.episode_id)
    calls = trajectory.tool_calls()
    assert [entry.call_id for entry in log] == [call.id for call in calls]
    results = {m.tool_call_id: m.content for m in trajectory.messages if m.role == "tool"}
    assert all(results[entry.call_id] == entry.result for entry in log)
    assert [call.function.name for call in calls][-2:] == ["recommend_product", "terminate"]
    assert "1001" in json.loads(calls[-2].function.arguments)["product_ids"]


async def test_unregistered_miner_cannot_serve(net: LocalNet) -> None:
    with pytest.raises(EndpointRefused, match="refused"):
        await serve_endpoint(settings_for(net, "stranger", port=9999))


def test_workers_get_the_parents_settings_and_a_shared_replay_store(
    net: LocalNet, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(WORKER_SETTINGS_ENV, "")  # restored (removed) after the test
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", "/tmp/unused-by-this-test")
    settings = settings_for(net, "miner1", workers=2, llm_api_key="sk-test-123")

    prepared = miner_process._prepare_workers(settings)

    assert prepared.nonce_db is not None and prepared.nonce_db.name.endswith("-nonces.db")
    rebuilt = MinerSettings.model_validate(json.loads(miner_process.os.environ[WORKER_SETTINGS_ENV]))
    assert rebuilt.revealed() == prepared.revealed()
    assert rebuilt.llm_api_key.get_secret_value() == "sk-test-123"
    assert isinstance(worker_app(), FastAPI)


def test_main_exits_2_on_invalid_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no .env here
    with pytest.raises(SystemExit) as stopped:
        miner_process.main({"netuid": 1, "network": "nowhere"})
    assert stopped.value.code == 2


def test_main_exits_2_on_an_unknown_agent(
    net: LocalNet, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    overrides = settings_for(
        net, "miner1", agent="tests.neurons.standins:no_such_agent", serve_on_chain=False
    )
    with pytest.raises(SystemExit) as stopped:
        miner_process.main(overrides.revealed())
    assert stopped.value.code == 2


@pytest.mark.parametrize(
    ("network", "ip", "warned"),
    [
        ("finney", "10.0.0.5", True),
        ("test", "127.0.0.1", True),
        ("finney", "8.8.8.8", False),
        ("local", "127.0.0.1", False),
    ],
)
def test_a_non_global_advertised_ip_is_warned_about_on_finney_and_test(
    network: str, ip: str, warned: bool
) -> None:
    settings = MinerSettings(
        _env_file=None, network=network, netuid=1, external_ip=ip, local_chain=Path("c.db")
    )  # type: ignore[call-arg]

    warning = miner_process.unreachable_ip_warning(settings)

    assert (warning is not None) == warned
    if warning is not None:
        assert f"validators on {network} will not query this miner" in warning
