"""Errors of the judging package.

JudgingError
└── JudgeUnavailable  the LLM reasoning judge timed out, failed, or answered outside its schema
                      after every retry (the reasoning check is then unscored, never 0)

Miner faults (fabricated results, hard rejects) are never exceptions: they are data in the
Judgment (a score of 0 with the reason).
"""

from __future__ import annotations

from judging.types import OutageCause


class JudgingError(Exception):
    """Base of every error raised by the judging package."""


class JudgeUnavailable(JudgingError):
    """The reasoning judge gave no usable verdict; ``cause`` is timeout, error or unparseable."""

    def __init__(self, cause: OutageCause, detail: str = "") -> None:
        super().__init__(f"{cause}: {detail}" if detail else cause)
        self.cause = cause
        self.detail = detail
