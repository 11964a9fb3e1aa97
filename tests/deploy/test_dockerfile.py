"""The project image: multi-stage, unprivileged, `arena` as the entrypoint, a minimal build context."""

from __future__ import annotations

import json
import re

from tests.deploy.conftest import ROOT

DOCKERFILE = (ROOT / "Dockerfile").read_text()


def _instructions(name: str) -> list[str]:
    return re.findall(rf"^{name}\s+(.+)$", DOCKERFILE, re.M)


def test_build_and_runtime_stages() -> None:
    stages = _instructions("FROM")
    assert len(stages) >= 2
    assert any(stage.endswith("AS runtime") for stage in stages)
    assert "COPY --from=build /opt/arena /opt/arena" in DOCKERFILE
    assert "build-essential" not in DOCKERFILE.split("AS runtime", 1)[1]  # no toolchain at run time


def test_runs_as_a_non_root_user_with_arena_entrypoint() -> None:
    users = _instructions("USER")
    assert users and users[-1] not in {"root", "0"}
    assert json.loads(_instructions("ENTRYPOINT")[-1]) == ["arena"]
    # The uid the compose files default to (ARENA_UID) is the image's user.
    assert "--uid 10001" in DOCKERFILE


def test_every_package_is_copied_into_the_build() -> None:
    for package in ("arena", "judging", "storage", "neurons"):
        assert f"COPY {package} ./src/{package}" in DOCKERFILE


def test_dockerignore_admits_what_the_build_copies_and_nothing_else() -> None:
    lines = [
        line
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert lines[0] == "**"  # deny everything, then admit
    admitted = {line[1:].rstrip("/") for line in lines if line.startswith("!")}
    sources = {
        src for copy in _instructions("COPY") if not copy.startswith("--from") for src in copy.split()[:-1]
    }
    assert sources == admitted
