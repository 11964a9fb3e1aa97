"""Errors of the judging package.

JudgingError
├── JudgeUnavailable  the LLM reasoning judge timed out, failed, or answered outside its schema
│                     after every retry (an outage: the reasoning check is unscored, never 0)
└── JudgeRefused      the judge refused our request (HTTP 4xx but 408 and 429): our own fault to
                      fix, not an outage (unscored ``refused``, logged at ERROR, never retried)

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


class JudgeRefused(JudgingError):
    """The judge answered our request with a client error (4xx but 408 timeout and 429 overload).

    The request is ours (the prompt, the model name, the key), so it is our fault: the same
    request would be refused again, and the miner's episode must not leave the weights window.
    """

    def __init__(self, status: int, detail: str = "") -> None:
        super().__init__(f"{status}: {detail}" if detail else str(status))
        self.status = status
        self.detail = detail
