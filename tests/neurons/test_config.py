"""Miner settings: environment, overrides, and the checks that stop a misconfigured miner at start-up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from neurons.config import MinerSettings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no stray .env
    import os

    for name in list(os.environ):
        if name.startswith("ARENA_"):
            monkeypatch.delenv(name)


def settings(**values: Any) -> MinerSettings:
    values.setdefault("netuid", 7)
    return MinerSettings(**values)


def test_environment_is_read_and_flags_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_NETUID", "3")
    monkeypatch.setenv("ARENA_EXTERNAL_IP", "203.0.113.9")
    monkeypatch.setenv("ARENA_PORT", "9001")
    monkeypatch.setenv("ARENA_LLM_BASE_URL", "http://127.0.0.1:8000/v1")
    from_env = MinerSettings()
    assert (from_env.netuid, from_env.port, from_env.llm_base_url) == (3, 9001, "http://127.0.0.1:8000/v1")
    assert MinerSettings(port=9002).port == 9002


def test_dotenv_file_is_read(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(
        "ARENA_NETUID=5\nARENA_SERVE_ON_CHAIN=false\nARENA_VALIDATOR_ONLY_THING=1\n"
    )
    assert MinerSettings().netuid == 5


@pytest.mark.parametrize(
    "values",
    [
        {"network": "mainnet"},
        {"network": "local"},  # no chain file
        {"agent": "llm"},  # no endpoint or model
        {"agent": "llm", "llm_base_url": "http://x", "llm_model": "m", "llm_api_key": "changeme"},
        {"agent": "llm", "llm_base_url": "http://x", "llm_model": "m", "llm_api_key": "replace0with0a0key"},
        {"external_ip": "miner.example.com"},  # chain.serve needs an IP literal
        {"network": "finney", "host": "0.0.0.0"},  # nothing to advertise
        {"port": 0},
        {"workers": 0},
        {"log_level": "LOUD"},
    ],
)
def test_bad_settings_are_refused(values: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        settings(**values)


def test_advertised_ip() -> None:
    assert settings(host="10.0.0.5").advertised_ip() == "10.0.0.5"
    assert settings(host="0.0.0.0", external_ip="203.0.113.9").advertised_ip() == "203.0.113.9"
    local = settings(network="local", local_chain=Path("chain.db"), host="0.0.0.0")
    assert local.advertised_ip() == "127.0.0.1"
    assert settings(host="0.0.0.0", serve_on_chain=False).advertised_ip() is None


def test_ws_url_and_log_level_are_accepted() -> None:
    tuned = settings(network="wss://node.example:443", host="10.0.0.5", log_level="debug")
    assert tuned.network == "wss://node.example:443" and tuned.log_level == "DEBUG"


def test_llm_agent_options_reveal_the_key_only_to_the_agent() -> None:
    tuned = settings(
        host="10.0.0.5", agent="llm", llm_base_url="http://x/v1", llm_model="m", llm_api_key="sk-1"
    )
    assert "sk-1" not in repr(tuned)
    assert tuned.agent_options() == {"base_url": "http://x/v1", "model": "m", "api_key": "sk-1"}
    assert settings(host="10.0.0.5").agent_options() == {}
