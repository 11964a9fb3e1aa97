"""`arena miner`: run a miner (its agent behind the signed ``/v1/tasks`` endpoint)."""

from __future__ import annotations

from typing import Any

from neurons.cli.flags import NEURON_FLAGS, Flag, overrides, with_flags
from neurons.miner.settings import MinerSettings

# The settings with a flag; every other one is an ARENA_* variable only (docs/protocol.md).
MINER_FLAGS = (
    *NEURON_FLAGS,
    Flag("agent"),
    Flag("llm_base_url"),
    Flag("llm_model"),
    Flag("external_ip"),
    Flag("workers"),
    Flag("app.min_stake"),
    Flag("serve_on_chain", "--serve"),
)


def miner(**given: Any) -> None:
    """Run a miner: serve the agent behind the signed /v1/tasks endpoint and advertise it on chain.

    Flags override ARENA_* environment variables (and .env); secrets such as the LLM API key are
    read from the environment only (ARENA_LLM_API_KEY). Exits 2 on invalid settings.

    Example: arena miner --network local --local-chain ./chain.db --netuid 1 --agent scripted --port 8091
    """
    from neurons.miner.process import main  # the SDK and the app load only when the command runs

    main(overrides(given, MINER_FLAGS))


with_flags(miner, MinerSettings, MINER_FLAGS)
