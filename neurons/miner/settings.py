"""The miner's settings (``ARENA_*``): where it listens and advertises, its agent, and its ``app`` section.

The ``app`` section (``ARENA_APP__*``) is the ``MinerAppConfig`` the endpoint takes: whom it
admits and how it bounds the work. Its fields were flat before (``ARENA_MIN_STAKE``...); those
names are still read with a ``FutureWarning`` (``neurons.settings``). The ``serving`` section
(``ARENA_SERVING__*``, ``neurons.settings.ConnectionBounds``) bounds the port's connections.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr, field_validator, model_validator

from neurons.settings import ConnectionBounds, NeuronSettings, Section


class MinerAppConfig(Section):
    """The signed ``/v1/tasks`` endpoint (``ARENA_APP__*``): whom it admits and how it bounds the work."""

    min_stake: float = Field(
        default=0.0, ge=0, description="Stake a caller needs besides a validator permit."
    )
    auth_max_age: float = Field(default=10.0, gt=0, le=60, description="Freshness window of signed requests.")
    metagraph_ttl: float = Field(
        default=30.0, ge=0, description="Seconds between background metagraph refreshes."
    )
    metagraph_max_age: float = Field(
        default=600.0,
        gt=0,
        description="Older than this, the last good snapshot admits no one (503 metagraph_expired).",
    )
    max_request_bytes: int = Field(default=1024 * 1024, ge=1024, description="Largest request body read.")
    max_request_depth: int = Field(default=32, ge=4, le=256, description="Deepest JSON nesting read.")
    max_concurrent_tasks: int = Field(
        default=16, ge=1, description="Tasks at once per worker; beyond it the miner answers 503."
    )
    deadline_margin: float = Field(
        default=1.0, ge=0, description="Seconds kept back to sign and send the answer."
    )
    max_steps: int = Field(
        default=20,
        ge=1,
        le=200,
        description="Most agent steps per task (the request's max_tool_calls caps it).",
    )


class MinerSettings(NeuronSettings):
    """The miner: where it listens and advertises, its agent, and how it admits validators."""

    host: str = Field(default="0.0.0.0", description="Interface to listen on.")
    port: int = Field(default=8091, ge=1, le=65535, description="Port to listen on.")
    external_ip: str | None = Field(
        default=None, description="IP advertised on chain (default: the host; 127.0.0.1 locally)."
    )
    serve_on_chain: bool = Field(default=True, description="Advertise the endpoint on chain at start.")
    workers: int = Field(default=1, ge=1, le=64, description="Uvicorn worker processes.")

    agent: str = Field(default="scripted", description="llm, scripted or package.module:function.")
    llm_base_url: str | None = Field(default=None, description="OpenAI-compatible endpoint of the llm agent.")
    llm_model: str | None = Field(default=None, description="Model of the llm agent.")
    llm_api_key: SecretStr = Field(default=SecretStr("none"), description="Its API key (secret).")
    nonce_db: Path | None = Field(
        default=None, description="SQLite replay store (derived in the temp dir with several workers)."
    )

    app: MinerAppConfig = Field(default_factory=MinerAppConfig)
    serving: ConnectionBounds = Field(default_factory=ConnectionBounds)

    renamed = {name: ("app", name) for name in MinerAppConfig.model_fields}

    @field_validator("external_ip")
    @classmethod
    def _ip_literal(cls, value: str | None) -> str | None:
        if value is not None:
            ipaddress.ip_address(value)  # chain.serve needs an IP literal, not a host name
        return value

    @model_validator(mode="after")
    def _check_miner(self) -> MinerSettings:
        if self.agent == "llm" and not (self.llm_base_url and self.llm_model):
            raise ValueError(
                "the llm agent needs ARENA_LLM_BASE_URL and ARENA_LLM_MODEL (--llm-base-url/--llm-model)"
            )
        if self.serve_on_chain and self.advertised_ip() is None:
            raise ValueError(
                f"host {self.host} cannot be advertised on chain; set ARENA_EXTERNAL_IP (--external-ip)"
            )
        return self

    def advertised_ip(self) -> str | None:
        """The IP literal served on chain: ``external_ip``, else ``host`` when it is a concrete IP."""
        if self.external_ip:
            return self.external_ip
        try:
            address = ipaddress.ip_address(self.host)
        except ValueError:
            return None
        if address.is_unspecified:
            return "127.0.0.1" if self.network == "local" else None
        return self.host

    def agent_options(self) -> dict[str, Any]:
        """Keyword options for ``load_agent(self.agent, ...)``."""
        if self.agent == "llm":
            return {
                "base_url": self.llm_base_url,
                "model": self.llm_model,
                "api_key": self.llm_api_key.get_secret_value(),
            }
        return {}
