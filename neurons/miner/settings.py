"""The miner's settings (``ARENA_*``): where it listens and advertises, its agent, whom it admits."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr, field_validator, model_validator

from neurons.settings import NeuronSettings


class MinerSettings(NeuronSettings):
    """The miner: where it listens and advertises, its agent, and how it admits validators."""

    host: str = "0.0.0.0"
    port: int = Field(default=8091, ge=1, le=65535)
    external_ip: str | None = None  # the IP advertised on chain; defaults to host, 127.0.0.1 locally
    serve_on_chain: bool = True
    workers: int = Field(default=1, ge=1, le=64)

    agent: str = "scripted"  # "llm", "scripted" or "package.module:function"
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: SecretStr = SecretStr("none")
    max_steps: int = Field(default=20, ge=1, le=200)

    min_stake: float = Field(default=0.0, ge=0)  # a caller needs a validator permit and this much stake
    auth_max_age: float = Field(default=10.0, gt=0, le=60)  # freshness window of signed requests
    metagraph_ttl: float = Field(default=30.0, ge=0)  # seconds between background metagraph refreshes
    # Older than this, the last good snapshot admits no one: requests get 503 metagraph_expired.
    metagraph_max_age: float = Field(default=600.0, gt=0)
    nonce_db: Path | None = None  # SQLite replay store; required (or derived) with several workers
    max_request_bytes: int = Field(default=1024 * 1024, ge=1024)
    max_request_depth: int = Field(default=32, ge=4, le=256)
    max_concurrent_tasks: int = Field(default=16, ge=1)  # per worker; beyond it the miner answers 503
    deadline_margin: float = Field(default=1.0, ge=0)  # seconds kept back to sign and send the answer

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
