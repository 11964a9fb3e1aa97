"""`arena tools serve`: a real server process on loopback, and its refusals of bad input."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from neurons.cli import app

ARENA = [sys.executable, "-c", "from neurons.cli import main; main()"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_healthy(url: str, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited early: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            response = httpx.get(f"{url}/health", timeout=1.0)
            if response.status_code == 200:
                body: dict[str, object] = response.json()
                return body
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError("server did not become healthy")


@pytest.fixture
def practice_server(fixture_index_dir: Path) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [*ARENA, "tools", "serve", "--index", str(fixture_index_dir), "--practice", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


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
