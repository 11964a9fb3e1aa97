"""Logging set-up for every entry point: one handler, key=value events, the SDK's logger tamed."""

from __future__ import annotations

import logging
import sys

_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def setup_logging(level: str = "INFO", *, json_lines: bool = False) -> None:
    """Configure the root logger once; called from ``main()`` of each process only.

    Args:
        level: the level for our own loggers (DEBUG, INFO, WARNING, ERROR).
        json_lines: reserved for structured sinks; key=value text is the default.
    """
    del json_lines
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(_FORMAT))
    root.addHandler(handler)
    root.setLevel(level.upper())
    # Chatty third-party loggers stay at WARNING unless we are debugging.
    for name in ("bittensor", "httpx", "httpcore", "apscheduler", "uvicorn.access", "openai"):
        logging.getLogger(name).setLevel(logging.WARNING if level.upper() != "DEBUG" else "INFO")
