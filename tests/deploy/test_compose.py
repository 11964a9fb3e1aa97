"""The compose stacks: `docker-compose config` accepts them, and they keep their operating promises."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.conftest import DEPLOY

STACKS = ["validator", "miner"]
PROFILES = ["--profile", "local-llm", "--profile", "monitoring"]


def _config(
    docker_compose: str, stack: str, tmp_path: Path, env: str | None = None
) -> subprocess.CompletedProcess[str]:
    # A copy of deploy/ with .env.example as .env: the stack reads .env (env_file) and the build
    # context (../..) is the copy's parent, so nothing is written into the repository.
    copy = tmp_path / "deploy"
    shutil.copytree(DEPLOY, copy, ignore=shutil.ignore_patterns("__pycache__", ".env"))
    (copy / stack / ".env").write_text(
        env if env is not None else (DEPLOY / stack / ".env.example").read_text()
    )
    return subprocess.run(
        [docker_compose, *PROFILES, "config"],
        capture_output=True,
        text=True,
        cwd=copy / stack,
        timeout=120,
        env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path)},  # no stray ARENA_* from here
    )


def _compose(stack: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / stack / "compose.yml").read_text())
    return loaded


@pytest.mark.parametrize("stack", STACKS)
def test_compose_config_is_valid(docker_compose: str, stack: str, tmp_path: Path) -> None:
    done = _config(docker_compose, stack, tmp_path)
    assert done.returncode == 0, done.stderr
    resolved = yaml.safe_load(done.stdout)
    assert stack in resolved["services"]
    # Every ${VAR} resolved: nothing left for the shell or the container to guess.
    assert "${" not in done.stdout


@pytest.mark.parametrize("stack", STACKS)
def test_compose_refuses_a_missing_secret(docker_compose: str, stack: str, tmp_path: Path) -> None:
    example = (DEPLOY / stack / ".env.example").read_text()
    without = "\n".join(line for line in example.splitlines() if not line.startswith("WALLETS_DIR="))
    done = _config(docker_compose, stack, tmp_path, without)
    assert done.returncode != 0
    assert "WALLETS_DIR" in done.stderr


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_variable_is_documented_in_env_example(stack: str) -> None:
    used = set(re.findall(r"\$\{([A-Z0-9_]+)", (DEPLOY / stack / "compose.yml").read_text()))
    documented = set(re.findall(r"^([A-Z0-9_]+)=", (DEPLOY / stack / ".env.example").read_text(), re.M))
    assert used - documented == set()


@pytest.mark.parametrize("stack", STACKS)
def test_every_env_example_entry_has_a_comment(stack: str) -> None:
    lines = (DEPLOY / stack / ".env.example").read_text().splitlines()
    # Each block of settings is preceded by a comment saying what it is.
    for n, line in enumerate(lines):
        if re.match(r"^[A-Z0-9_]+=", line):
            block_start = n
            while block_start > 0 and re.match(r"^[A-Z0-9_]+=", lines[block_start - 1]):
                block_start -= 1
            assert block_start > 0 and lines[block_start - 1].startswith("#"), line


@pytest.mark.parametrize("stack", STACKS)
def test_every_service_has_healthcheck_restart_and_named_volumes(stack: str) -> None:
    compose = _compose(stack)
    named = set(compose["volumes"])
    for name, service in compose["services"].items():  # YAML merge keys (<<: *arena) are resolved
        assert service.get("restart") == "unless-stopped", name
        assert "healthcheck" in service, name
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            assert source.startswith(("/", "../", "${")) or source in named, f"{name}: {volume}"


def test_validator_stack_has_every_service() -> None:
    services = _compose("validator")["services"]
    assert set(services) == {"validator", "postgres", "vllm", "prometheus", "grafana", "node-exporter"}
    assert services["validator"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["validator"]["environment"]["PROMETHEUS_MULTIPROC_DIR"] == "/run/arena-metrics"
    assert any(t.startswith("/run/arena-metrics") for t in services["validator"]["tmpfs"])


@pytest.mark.parametrize(("stack", "model_var"), [("validator", "JUDGE_MODEL"), ("miner", "AGENT_MODEL")])
def test_vllm_serves_qwen3_with_tool_and_reasoning_parsers_on_a_gpu(stack: str, model_var: str) -> None:
    vllm = _compose(stack)["services"]["vllm"]
    flags = vllm["command"]
    assert f"--model=${{{model_var}:-Qwen/Qwen3-8B}}" in flags
    assert "--enable-auto-tool-choice" in flags
    assert "--tool-call-parser=hermes" in flags
    assert "--reasoning-parser=qwen3" in flags
    device = vllm["deploy"]["resources"]["reservations"]["devices"][0]
    assert device["driver"] == "nvidia" and device["capabilities"] == ["gpu"]


def test_miner_extras_are_optional_profiles() -> None:
    services = _compose("miner")["services"]
    assert "profiles" not in services["miner"]
    assert services["vllm"]["profiles"] == ["local-llm"]
    assert services["prometheus"]["profiles"] == ["monitoring"]
