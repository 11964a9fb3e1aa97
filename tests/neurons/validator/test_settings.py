"""The validator's settings tree: sections from ``ARENA_<SECTION>__<FIELD>``, renamed names, defaults once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from judging.config import JudgeCalls, JudgeConfig
from neurons.validator.settings import RENAMED, ClientLimits, PoolConfig, RoundConfig, ValidatorSettings

pytestmark = pytest.mark.usefixtures("no_arena_env")


def vsettings(**values: Any) -> ValidatorSettings:
    return ValidatorSettings(netuid=7, toolserver_url="https://validator.example:8092", **values)


def test_sections_read_their_nested_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_ROUND__TASKS_PER_ROUND", "9")
    monkeypatch.setenv("ARENA_ROUND__EPISODE_SECONDS", "42.5")
    monkeypatch.setenv("ARENA_CLIENT__MAX_CONCURRENCY", "12")
    monkeypatch.setenv("ARENA_CLIENT__BREAKER_COOLDOWN", "30")
    monkeypatch.setenv("ARENA_POOL__INTENTS", '["shop", "voucher"]')
    monkeypatch.setenv("ARENA_POOL__FINDABLE", "false")
    loaded = vsettings()
    assert (loaded.round.tasks_per_round, loaded.round.episode_seconds) == (9, 42.5)
    assert (loaded.client.max_concurrency, loaded.client.breaker_cooldown) == (12, 30.0)
    assert loaded.pool.intents == ("shop", "voucher") and loaded.pool.findable is False
    # A keyword override of one field keeps the section's other fields from the environment.
    overridden = vsettings(round={"miners_per_round": 3})
    assert (overridden.round.miners_per_round, overridden.round.tasks_per_round) == (3, 9)


def test_the_defaults_are_the_sections_own() -> None:
    loaded = vsettings()
    assert loaded.round == RoundConfig() and loaded.client == ClientLimits() and loaded.pool == PoolConfig()


def test_a_renamed_variable_still_works_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_TASKS_PER_ROUND", "6")
    monkeypatch.setenv("ARENA_QUERY_CONCURRENCY", "5")
    monkeypatch.setenv("ARENA_TASK_INTENTS", '["product"]')
    with pytest.warns(FutureWarning) as caught:
        loaded = vsettings()
    said = {str(warning.message) for warning in caught}
    assert "ARENA_TASKS_PER_ROUND is deprecated: set ARENA_ROUND__TASKS_PER_ROUND" in said
    assert "ARENA_QUERY_CONCURRENCY is deprecated: set ARENA_CLIENT__MAX_CONCURRENCY" in said
    assert loaded.round.tasks_per_round == 6
    assert loaded.client.max_concurrency == 5 and loaded.pool.intents == ("product",)


def test_a_renamed_variable_in_dotenv_works_and_the_new_name_wins(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / ".env").write_text("ARENA_MIN_HELD_OUT=11\nARENA_EPISODE_SECONDS=33\n")
    monkeypatch.setenv("ARENA_ROUND__EPISODE_SECONDS", "44")
    with pytest.warns(FutureWarning) as caught:
        loaded = vsettings()
    assert any("set ARENA_POOL__MIN_HELD_OUT" in str(warning.message) for warning in caught)
    assert loaded.pool.min_held_out == 11 and loaded.round.episode_seconds == 44


def test_every_renamed_variable_names_a_section_field() -> None:
    for old, (section, name) in RENAMED.items():
        assert old not in ValidatorSettings.model_fields, old
        model = ValidatorSettings.model_fields[section].annotation
        assert isinstance(model, type) and name in model.model_fields, (old, section, name)


def test_an_unknown_keyword_is_refused_not_ignored() -> None:
    # Variables are matched leniently (one .env serves both roles); a caller's keyword is not.
    with pytest.raises(TypeError, match="tasks_per_round"):
        vsettings(tasks_per_round=3)


def test_the_judges_timeout_and_retries_have_one_name(monkeypatch: pytest.MonkeyPatch) -> None:
    assert vsettings().judge.calls == JudgeCalls() == JudgeConfig().calls
    monkeypatch.setenv("ARENA_JUDGE__TIMEOUT", "30")
    monkeypatch.setenv("ARENA_JUDGE__RETRIES", "0")
    loaded = vsettings()
    # The section's fields are JudgeCalls' own, so what the validator reads is what the judge gets.
    assert loaded.judge.calls == JudgeCalls(timeout=30.0, retries=0)
    for name, field in JudgeCalls.model_fields.items():
        inherited = type(loaded.judge).model_fields[name]
        assert (inherited.default, inherited.description, inherited.metadata) == (
            field.default,
            field.description,
            field.metadata,
        )


def test_the_turn_cap_is_the_judges_default_and_leaves_room_for_the_tool_budget() -> None:
    assert RoundConfig().max_turns == JudgeConfig().max_turns == 200
    assert vsettings(round={"max_turns": 120}).round.max_turns == 120
    # 120 tool calls take at least 240 messages: a cap of 200 would reject honest episodes.
    with pytest.raises(ValueError, match="max_turns"):
        RoundConfig(max_tool_calls=120)


def test_a_placeholder_validator_secret_is_refused() -> None:
    # It keys the round secrets committed on chain: a template value would be anyone's.
    for placeholder in ("replace0with0a0fourth0random0string", "changeme-changeme-changeme"):
        with pytest.raises(ValueError, match="token_secret is a placeholder"):
            vsettings(token_secret=placeholder)
    assert vsettings(token_secret="a-long-random-token-secret").token_secret is not None
