"""`arena tools serve`: a real server process on loopback, and its refusals of bad input."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from neurons.cli import app
from tests.neurons.cli.servers import free_port, serving


@pytest.fixture
def practice_server(fixture_index_dir: Path) -> Iterator[str]:
    port = free_port()
    with serving(
        ["tools", "serve", "--index", str(fixture_index_dir), "--practice", "--port", str(port)], port=port
    ) as url:
        yield url


def test_serve_answers_a_real_tool_call(practice_server: str) -> None:
    with httpx.Client(base_url=practice_server, timeout=10.0) as client:
        assert client.get("/health").json()["products"] == 20
        episode = client.post("/v1/practice/episodes", json={"task_id": "t-cli"}).json()
        response = client.post(
            "/v1/tools/view_product_information",
            json={"product_ids": "5003"},
            headers={"Authorization": f"Bearer {episode['token']}", "X-Arena-Call-Id": "call_1"},
        )
    assert response.status_code == 200
    body = response.json()
    assert body["call_id"] == "call_1" and body["error"] is False
    assert json.loads(body["content"])[0]["attributes"] == {"power_source": ["battery"]}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--toolset", "sb-9"], "unknown --toolset"),
        ([], "pass --secret-file"),
        (["--practice", "--max-calls", "0"], "must be positive"),
    ],
)
def test_serve_refuses_bad_options(fixture_index_dir: Path, extra: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["tools", "serve", "--index", str(fixture_index_dir), *extra])
    assert result.exit_code == 2
    assert message in result.output


def test_serve_refuses_a_short_or_missing_secret(fixture_index_dir: Path, tmp_path: Path) -> None:
    short = tmp_path / "secret"
    short.write_bytes(b"abc\n")
    result = CliRunner().invoke(
        app, ["tools", "serve", "--index", str(fixture_index_dir), "--secret-file", str(short)]
    )
    assert result.exit_code == 2 and "fewer than 16 bytes" in result.output
    missing = CliRunner().invoke(
        app, ["tools", "serve", "--index", str(fixture_index_dir), "--secret-file", str(tmp_path / "nope")]
    )
    assert missing.exit_code == 2 and "cannot read --secret-file" in missing.output


def test_serve_refuses_a_missing_index(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["tools", "serve", "--index", str(tmp_path / "none"), "--practice"])
    assert result.exit_code == 2
    assert "error:" in result.output


def test_serve_help_has_an_example() -> None:
    result = CliRunner().invoke(app, ["tools", "serve", "--help"])
    assert result.exit_code == 0
    assert "Example: arena tools serve" in result.output
