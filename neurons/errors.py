"""Errors of the composition root (our own faults, raised and retried at the job boundary).

NeuronError
├── ChainUnavailable  a chain call timed out, lost its connection or could not be decoded;
│                     the job that made it logs, counts, and retries on its next tick
├── LocalChainError   the local chain file is missing, of another subnet, or asked for
│                     something the local chain does not model
└── DeadlinePassed    a miner query waited for a connection slot past its deadline and was
                      never sent (validator overload: not the miner's fault)

A chain *refusal* (rate limit, not registered, too few weights) is not an exception: it is a
``Submission``/``WeightSubmission`` with ``success=False`` and a reason code.
"""

from __future__ import annotations


class NeuronError(Exception):
    """Base of every error raised by the neurons package."""


class ChainUnavailable(NeuronError):
    """A chain call failed for a reason outside the chain's own rules (timeout, transport, decode).

    Attributes:
        call: the chain operation that failed (``metagraph``, ``block``, ``set_weights``, ``serve``).
        kind: a short failure class (``timeout``, ``connection``, ``chain``, ``local``, ``missing``).
    """

    def __init__(self, call: str, kind: str, message: str) -> None:
        super().__init__(f"{call} failed ({kind}): {message}")
        self.call = call
        self.kind = kind


class LocalChainError(NeuronError):
    """The local chain file is missing or invalid, or a request is outside what it models."""


class DeadlinePassed(NeuronError):
    """A miner query was never sent: its deadline passed while it waited for a connection slot.

    The validator was overloaded (more queries than ``max_concurrency`` allows in the time given);
    this is our fault, not the miner's, so it must not be scored as the miner's timeout.
    """
