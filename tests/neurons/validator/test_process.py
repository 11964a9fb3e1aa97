"""The validator's composition: secret, database, index, the app, and one in-process pass (`serve --once`)."""

from __future__ import annotations

import logging
import stat
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY
from sqlalchemy.orm import Session

from arena.episode import Budgets, EpisodeRegistry, EpisodeTokens
from arena.index import SearchIndex
from arena.tools import ToolContext
from arena.toolserver import create_tool_router
from neurons.chain.local.state import read_commits
from neurons.miner.agents.scripted import scripted_agent
from neurons.validator.app import MeteredToolLog, create_validator_app
from neurons.validator.components import curation_exporter, open_validator
from neurons.validator.process import serve
from neurons.validator.settings import ValidatorSettings
from neurons.validator.startup import StartupError, derive, load_secret, open_database, open_search_index
from storage import repository
from storage.db import make_engine, make_sessionmaker
from tests.neurons.conftest import NETUID, LocalNet
from tests.neurons.rig import failing_agent, serve_miners
from tests.neurons.standins import free_socket


def settings(tmp_path: Path, **values: Any) -> ValidatorSettings:
    values.setdefault("netuid", 7)
    values.setdefault("toolserver_url", "http://127.0.0.1:8092")
    return ValidatorSettings(data_dir=tmp_path, **values)


def test_the_secret_file_is_made_once_private_and_reused(tmp_path: Path) -> None:
    first = load_secret(settings(tmp_path))
    path = tmp_path / "validator.secret"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_secret(settings(tmp_path)) == first and len(first) >= 32
    assert (
        load_secret(settings(tmp_path, token_secret="a-configured-secret-value"))
        == b"a-configured-secret-value"
    )
    keys = {derive(first, purpose) for purpose in ("tokens", "rounds", "tasks")}
    assert len(keys) == 3 and first not in keys


def test_a_server_database_must_be_at_head_unless_upgrading_is_asked(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'server.db'}"  # given explicitly: treated like a server database
    with pytest.raises(StartupError, match="--upgrade-db"):
        open_database(settings(tmp_path, db_url=url))
    open_database(settings(tmp_path, db_url=url, db_upgrade=True)).dispose()
    open_database(settings(tmp_path, db_url=url)).dispose()  # now at head
    open_database(settings(tmp_path / "embedded")).dispose()  # the embedded default migrates itself


def test_the_index_is_built_from_the_catalog_on_first_start(
    tmp_path: Path, fixture_catalog_path: Path
) -> None:
    with pytest.raises(StartupError, match="arena catalog build"):
        open_search_index(settings(tmp_path))
    built = open_search_index(settings(tmp_path, catalog=fixture_catalog_path))
    assert len(built) == 20 and (tmp_path / "index" / "manifest.json").is_file()
    built.close()
    open_search_index(settings(tmp_path, catalog=tmp_path / "gone.jsonl")).close()  # the index is there now


async def test_the_app_serves_tools_health_and_metrics_and_counts_requests(
    fixture_index: SearchIndex,
) -> None:
    registry = EpisodeRegistry(EpisodeTokens(b"s" * 32), MeteredToolLog())
    app = create_validator_app(
        tool_router=create_tool_router(registry, ToolContext(index=fixture_index)),
        health=lambda: {"status": "ok"},
    )
    before = REGISTRY.get_sample_value("arena_toolserver_requests_total", {"code": "401"}) or 0.0
    unknown = (
        REGISTRY.get_sample_value("arena_tool_calls_total", {"tool": "unknown", "status": "error"}) or 0.0
    )
    episode_id, token = registry.open_episode("t-1", "hk", Budgets(5, 30.0))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://v") as http:
        assert (await http.get("/health")).json() == {"status": "ok"}
        assert (await http.post("/v1/tools/find_product", json={"q": "x"})).status_code == 401
        answer = await http.post(
            "/v1/tools/buy_everything", json={}, headers={"Authorization": f"Bearer {token}"}
        )
        assert answer.status_code == 200 and answer.json()["error"] is True
        exposition = (await http.get("/metrics")).text
        schema = await http.get("/openapi.json")  # issue 27, item 13: no API map on the public port
    assert schema.status_code == 404
    assert "arena_toolserver_requests_total" in exposition
    assert REGISTRY.get_sample_value("arena_toolserver_requests_total", {"code": "401"}) == before + 1
    assert (
        REGISTRY.get_sample_value("arena_tool_calls_total", {"tool": "unknown", "status": "error"})
        == unknown + 1
    )
    assert registry.log(episode_id)[0].tool == "buy_everything"  # the log keeps what was asked


async def test_serve_once_runs_rotation_a_round_and_weights_in_one_process(
    net: LocalNet, tmp_path: Path, fixture_catalog_path: Path
) -> None:
    exported: list[tuple[Session, Path]] = []

    def exporter(session: Session, out: Path) -> dict[str, int]:
        exported.append((session, out))
        return {"rows": 0}

    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()
    config = ValidatorSettings(
        network="local",
        local_chain=net.path,
        netuid=NETUID,
        wallet_name="validator",
        wallet_path=net.wallets_dir,
        host="127.0.0.1",
        port=port,
        data_dir=tmp_path / "validator",
        catalog=fixture_catalog_path,
        pool={"min_held_out": 4, "batch": 6, "practice_share": 0, "never_touch_share": 0, "findable": False},
        round={"tasks_per_round": 2, "episode_seconds": 20},
    )
    async with AsyncExitStack() as stack:
        await serve_miners(stack, net, {"miner1": scripted_agent, "miner2": failing_agent})
        report = await serve(config, once=True, exporter=exporter)
    assert report is not None and report["failed"] == []
    assert report["round"]["round_id"] == 0 and report["round"]["stored"] == 4
    assert report["round"]["ends"] == {"completed": 2, "miner_error": 2}
    assert report["weights"]["result"] == "submitted" and report["weights"]["success"] is True
    assert report["weights"]["reveal_round"] is not None  # commit-reveal is on, as on finney
    assert exported and exported[0][1] == tmp_path / "validator" / "exports"
    [commit] = read_commits(net.path)
    assert commit.status == "pending" and commit.plaintext is not None
    assert 3 not in commit.plaintext["dests"]  # the failing miner earns nothing
    engine = make_engine(config.database_url())
    with make_sessionmaker(engine)() as session:
        assert repository.count_judged(session) == 4
        assert repository.get_round(session, round_id=0).closed_at is not None  # type: ignore[union-attr]
    engine.dispose()


def test_pruning_frees_the_metered_tool_logs(fixture_index: SearchIndex) -> None:
    now = [1_000_000.0]
    registry = EpisodeRegistry(
        EpisodeTokens(b"s" * 32), MeteredToolLog(), clock=lambda: now[0], token_grace_s=5
    )
    episode_id, token = registry.open_episode("t-1", "hk", Budgets(5, 30.0))
    registry.call_tool(
        token, "find_product", {"q": "kettle"}, call_id="c1", ctx=ToolContext(index=fixture_index)
    )
    assert len(registry.log(episode_id)) == 1
    now[0] += 60
    assert registry.prune() == [episode_id]
    assert registry.log(episode_id) == []


def test_the_curation_exporter_writes_the_export_and_names_the_database_without_its_password(
    tmp_path: Path,
) -> None:
    engine = open_database(settings(tmp_path))  # the embedded default, migrated
    out = tmp_path / "exports"
    password_url = "postgresql+psycopg://arena:hunter2-secret@db.example:5432/arena"
    with make_sessionmaker(engine)() as session:
        funnel = curation_exporter(settings(tmp_path, db_url=password_url))(session, out)
    engine.dispose()
    assert funnel["source"]["traces"] == 0
    for name in ("manifest.json", "funnel.json", "README.md", "sft.jsonl"):
        assert (out / name).is_file()
    card = (out / "README.md").read_text()
    assert "db.example" in card and "hunter2-secret" not in card


def local_settings(
    net: LocalNet, tmp_path: Path, fixture_catalog_path: Path, **values: Any
) -> ValidatorSettings:
    values = {"wallet_name": "validator", **values}
    return ValidatorSettings(
        network="local",
        local_chain=net.path,
        netuid=NETUID,
        wallet_path=net.wallets_dir,
        host="127.0.0.1",
        data_dir=tmp_path / "validator",
        catalog=fixture_catalog_path,
        **values,
    )


async def test_a_weight_limit_below_the_maximum_is_warned_about_at_start(
    make_net: Callable[..., LocalNet],
    tmp_path: Path,
    fixture_catalog_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    net = make_net(max_weights_limit=6553)  # 10%
    validator = open_validator(
        local_settings(net, tmp_path, fixture_catalog_path, policy={"burn_share": 0.5})
    )
    try:
        with caplog.at_level(logging.WARNING, logger="neurons.validator.components"):
            warning = await validator.warn_weight_limit()
    finally:
        await validator.aclose()

    assert warning is not None and "burn share 50% is cut to 10.00%" in warning
    assert "weight_limit max_weight_share=0.1000" in caplog.text


async def test_on_the_local_network_rounds_query_any_miner_address(
    net: LocalNet, tmp_path: Path, fixture_catalog_path: Path
) -> None:
    validator = open_validator(local_settings(net, tmp_path, fixture_catalog_path))
    try:
        assert validator.endpoint_policy().any_address  # the local network: every process on one host
    finally:
        await validator.aclose()


async def test_a_validator_without_a_permit_runs_no_round_and_says_why(
    net: LocalNet, tmp_path: Path, fixture_catalog_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    validator = open_validator(local_settings(net, tmp_path, fixture_catalog_path, wallet_name="miner1"))
    try:
        with caplog.at_level(logging.ERROR):
            summary = await validator.round()
        health = validator.health()
    finally:
        await validator.aclose()
    assert (summary.result, summary.round_id, summary.stored) == ("refused", None, 0)
    assert (
        "self_check_failed cause=no_permit" in caplog.text and "round_refused cause=no_permit" in caplog.text
    )
    assert health["self_check"] == {
        "ok": False,
        "cause": "no_permit",
        "detail": health["self_check"]["detail"],
    }
    assert REGISTRY.get_sample_value("arena_validator_self_check_ok") == 0.0


async def test_a_registered_permitted_validator_passes_its_self_check(
    net: LocalNet, tmp_path: Path, fixture_catalog_path: Path
) -> None:
    validator = open_validator(local_settings(net, tmp_path, fixture_catalog_path))
    try:
        check = await validator.self_check()
    finally:
        await validator.aclose()
    assert check.ok and validator.health()["self_check"]["ok"] is True


async def test_the_judge_takes_its_turn_cap_from_the_round_section(
    net: LocalNet, tmp_path: Path, fixture_catalog_path: Path
) -> None:
    validator = open_validator(local_settings(net, tmp_path, fixture_catalog_path, round={"max_turns": 150}))
    try:
        assert validator.round_deps().judge_config.max_turns == 150
    finally:
        await validator.aclose()


async def test_the_judges_code_runs_in_a_bounded_pool_of_its_own(
    net: LocalNet, tmp_path: Path, fixture_catalog_path: Path
) -> None:
    validator = open_validator(local_settings(net, tmp_path, fixture_catalog_path, judge={"workers": 3}))
    try:
        pool = validator.round_deps().judge_executor
        assert pool is validator.judge_pool and pool is not None and pool._max_workers == 3
    finally:
        await validator.aclose()
    assert validator.judge_pool is not None and validator.judge_pool._shutdown
