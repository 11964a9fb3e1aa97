"""The validator <-> miner wire protocol: versions, paths, headers, TaskRequest/TaskResponse, JSON depth caps.

One exchange per episode, synchronous (see ``docs/protocol.md``): the validator POSTs a signed
``TaskRequest`` to ``/v1/tasks``; the miner runs its agent against the validator's tool server and
answers ``200`` with a ``TaskResponse`` whose body it signs for the validator, bound to the
request's nonce by ``response_binding``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

from arena.types import Trajectory

PROTOCOL_VERSION = 1
"""Bumped on any incompatible change of the models below; both sides refuse another version."""

WEIGHTS_VERSION_KEY = 1_000
"""Our ``version_key`` for set_weights (never the SDK default 0). Raised whenever a change to the
protocol or to scoring must lock out validators running older code: the subnet owner then sets
the chain's ``WeightsVersionKey`` to the lowest key still accepted."""

TASKS_PATH = "/v1/tasks"
HEALTH_PATH = "/health"
METRICS_PATH = "/metrics"

# The btauth/1 header names (bittensor.http_auth), spelled here so no module but
# neurons/chain/ needs the SDK; tests pin them to the SDK's own constants.
HEADER_HOTKEY = "X-Bittensor-Hotkey"
HEADER_NONCE = "X-Bittensor-Nonce"
HEADER_CRYPTO = "X-Bittensor-Crypto"
HEADER_RECEIVER = "X-Bittensor-Receiver"
HEADER_SIGNATURE = "X-Bittensor-Signature"
HEADER_VERSION = "X-Bittensor-Version"

# The tool server's call-id header: the model's tool_call id, logged with each call.
HEADER_CALL_ID = "X-Arena-Call-Id"

RESPONSE_METHOD = "RESPONSE"
"""The btauth ``method`` a miner signs its response under; no request can carry it, so a signed
response can never be replayed as a request (nor a request as a response)."""

MAX_TOOL_SCHEMAS = 32
MAX_RESPONSE_BYTES = 64 * 1024 * 1024  # the most a request may allow a miner to send back


def response_binding(request_nonce: str | int, path: str = TASKS_PATH) -> tuple[str, str]:
    """The (method, path) a response is signed under: the request's path and nonce, method ``RESPONSE``.

    The btauth payload already binds the body hash, the miner (signer) and the validator
    (receiver); putting the request nonce in the signed path binds the response to exactly one
    request, so a response cannot be replayed against another request of the same validator.
    """
    return RESPONSE_METHOD, f"{path}#nonce={int(request_nonce)}"


class Wire(BaseModel):
    """Base of the wire models: frozen, strict (no coercion), no unknown fields, finite floats."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)

    def to_bytes(self) -> bytes:
        """The exact JSON bytes that go on the wire (and are signed)."""
        return self.model_dump_json(by_alias=True, exclude_none=True).encode("utf-8")


class TaskBudgets(Wire):
    """What the miner may spend on one episode; the tool server enforces calls and time itself."""

    max_tool_calls: int = Field(ge=1, le=1000)
    max_seconds: float = Field(gt=0, le=3600)
    max_response_bytes: int = Field(ge=1024, le=MAX_RESPONSE_BYTES)


class TaskRequest(Wire):
    """One task for a miner (validator -> miner, ``POST /v1/tasks``, signed for that miner only).

    ``deadline`` is absolute (UTC): the validator stops reading the response then; a miner
    should answer a little before it. ``episode_token`` authorises calls to ``tool_server_url``
    for this episode only and is never logged.
    """

    protocol_version: int
    episode_id: str = Field(min_length=1, max_length=128)
    task_id: str = Field(min_length=1, max_length=128)
    query: str = Field(min_length=1, max_length=8000)
    tool_server_url: str = Field(min_length=1, max_length=2048)
    episode_token: str = Field(min_length=1, max_length=4096, repr=False)
    tools: tuple[dict[str, Any], ...] = Field(max_length=MAX_TOOL_SCHEMAS)
    toolset: str = Field(min_length=1, max_length=64)
    deadline: AwareDatetime
    budgets: TaskBudgets

    @field_validator("tool_server_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("tool_server_url must be an absolute http(s) URL")
        if parts.query or parts.fragment:
            raise ValueError("tool_server_url must not carry a query or fragment")
        return value.rstrip("/")

    def seconds_left(self, now: datetime | None = None) -> float:
        """Seconds from ``now`` (default: the current UTC time) to the deadline; negative once past."""
        return (self.deadline - (now or datetime.now(UTC))).total_seconds()


class TaskResponse(Wire):
    """A miner's answer (miner -> validator, ``200``; the body signed by the miner for the validator).

    ``stop`` is the agent's own account of why it stopped (informational, never scored).
    """

    protocol_version: int
    episode_id: str = Field(min_length=1, max_length=128)
    trajectory: Trajectory
    stop: str | None = Field(default=None, max_length=64)


class TaskRefusal(Wire):
    """The body of any non-200 answer from ``/v1/tasks``: a short reason code and a message."""

    reason: str
    detail: str
