"""Miner settings: environment, overrides, and the checks that stop a misconfigured miner at start-up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from neurons.miner.settings import MinerAppConfig, MinerSettings
from neurons.validator.settings import ValidatorSettings

pytestmark = pytest.mark.usefixtures("no_arena_env")


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


# ---------------------------------------------------------------------------- the validator's settings


def vsettings(**values: Any) -> ValidatorSettings:
    values.setdefault("netuid", 7)
    values.setdefault("toolserver_url", "https://validator.example:8092/")
    return ValidatorSettings(**values)


def test_validator_reads_the_names_operators_use(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env = {
        "ARENA_NETUID": "9",
        "ARENA_PORT": "9100",
        "ARENA_DB_URL": "postgresql+psycopg://arena:pw0123456789@db:5432/arena",
        "ARENA_DATA_DIR": str(tmp_path),
        "ARENA_TOOLSERVER_URL": "http://203.0.113.10:9100",
        "ARENA_TOKEN_SECRET": "a-long-random-token-secret",
        "ARENA_INDEX": "/data/index",
        "ARENA_ROUND_INTERVAL": "120",
        "ARENA_WEIGHTS_INTERVAL": "900",
        "ARENA_JUDGE__BASE_URL": "http://vllm:8000/v1",
        "ARENA_JUDGE__MODEL": "judge",
        "ARENA_JUDGE__API_KEY": "sk-judge-key",
        "ARENA_JUDGE__TIMEOUT": "30",
        "ARENA_POLICY__BURN_SHARE": "0.25",
        "ARENA_POLICY__WINDOW": "32",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    loaded = ValidatorSettings()
    assert (loaded.netuid, loaded.port, loaded.round_interval, loaded.weights_interval) == (9, 9100, 120, 900)
    assert loaded.database_url() == env["ARENA_DB_URL"] and not loaded.embedded_database()
    assert loaded.tool_server_url() == "http://203.0.113.10:9100"
    assert loaded.index_path() == Path("/data/index")
    assert (loaded.judge.base_url, loaded.judge.model, loaded.judge.timeout) == (
        "http://vllm:8000/v1",
        "judge",
        30,
    )
    assert (loaded.policy.burn_share, loaded.policy.window) == (0.25, 32)
    shown = repr(loaded)
    assert "pw0123456789" not in shown and "sk-judge-key" not in shown and "a-long-random" not in shown
    # A flag overrides one judge field and keeps the others from the environment.
    assert ValidatorSettings(judge={"model": "other"}).judge.base_url == "http://vllm:8000/v1"


def test_validator_defaults_derive_from_the_data_dir(tmp_path: Path) -> None:
    local = vsettings(network="local", local_chain=Path("chain.db"), data_dir=tmp_path, toolserver_url=None)
    assert local.tool_server_url() == "http://127.0.0.1:8092"
    assert local.database_url() == f"sqlite:///{tmp_path / 'validator.db'}" and local.embedded_database()
    assert local.index_path() == tmp_path / "index" and local.export_path() == tmp_path / "exports"
    assert vsettings(host="10.1.2.3", toolserver_url=None).tool_server_url() == "http://10.1.2.3:8092"
    assert vsettings().tool_server_url() == "https://validator.example:8092"
    assert vsettings().workers == 1 and vsettings().judge.base_url is None


@pytest.mark.parametrize(
    "values",
    [
        {"workers": 2},  # the episode registry is in memory
        {"toolserver_url": None},  # 0.0.0.0 on finney: miners could not reach us
        {"toolserver_url": "ftp://validator.example"},
        {"token_secret": "short"},
        {"token_secret": "changeme"},
        {"token_secret": "replace0with0a0fourth0random0string"},
        {"judge": {"base_url": "http://vllm:8000/v1"}},  # no model
        {"judge": {"base_url": "http://vllm:8000/v1", "model": "m", "api_key": "replace0with0another"}},
        {"toolset": "sb-9"},
        {"pool": {"practice_share": 0.7, "never_touch_share": 0.5}},
        {"policy": {"burn_share": 1.5}},
        {"round": {"tasks_per_round": 0}},
        {"round": {"episode_seconds": 0}},
        {"round": {"tasks": 3}},  # a section refuses a name it does not have
        {"client": {"max_concurrency": 0}},
        {"pool": {"intents": []}},
        {"pool": {"intents": ["gossip"]}},
    ],
)
def test_bad_validator_settings_are_refused(values: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        vsettings(**values)


def test_the_miner_endpoint_is_a_section(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_APP__MIN_STAKE", "250")
    monkeypatch.setenv("ARENA_APP__MAX_CONCURRENT_TASKS", "4")
    loaded = settings(host="10.0.0.5")
    assert (loaded.app.min_stake, loaded.app.max_concurrent_tasks) == (250.0, 4)
    assert loaded.app.max_steps == MinerAppConfig().max_steps  # the default, written once


def test_the_miner_reads_a_flat_name_of_before_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_AUTH_MAX_AGE", "20")
    with pytest.warns(FutureWarning, match="ARENA_AUTH_MAX_AGE is deprecated: set ARENA_APP__AUTH_MAX_AGE"):
        loaded = settings(host="10.0.0.5")
    assert loaded.app.auth_max_age == 20.0
