"""The local substrate's read surface: what the SDK sees when it asks the local chain."""

from __future__ import annotations

from pathlib import Path

import pytest

from neurons.chain.local.state import LocalChain, create_local_chain, register
from neurons.chain.local.substrate import LocalSubstrate
from neurons.errors import LocalChainError


@pytest.fixture
def substrate(tmp_path: Path) -> LocalSubstrate:
    path = tmp_path / "c.db"
    create_local_chain(path, 2, owner_hotkey="o", owner_coldkey="oc", tempo=9, block_seconds=60.0)
    register(path, "v", "vc", stake=4.0, validator_permit=True)
    return LocalSubstrate(LocalChain(path))


async def test_storage_reads_answer_per_subnet(substrate: LocalSubstrate) -> None:
    assert await substrate.query("SubtensorModule", "Uids", [2, "v"]) == 1
    assert await substrate.query("SubtensorModule", "Uids", [2, "nobody"]) is None
    assert await substrate.query("SubtensorModule", "Uids", [3, "v"]) is None
    assert await substrate.query("SubtensorModule", "ValidatorPermit", [2]) == [False, True]
    assert await substrate.query("SubtensorModule", "Tempo", [2]) == 9
    assert await substrate.query_map("SubtensorModule", "Uids", [2]) == [("o", 0), ("v", 1)]
    assert await substrate.constant("Aura", "SlotDuration") == 60_000


async def test_unmodelled_reads_fail_loudly(substrate: LocalSubstrate) -> None:
    with pytest.raises(LocalChainError):
        await substrate.query("Balances", "TotalIssuance")
    with pytest.raises(LocalChainError):
        await substrate.runtime_call("NeuronInfoRuntimeApi", "get_neurons_lite", [2])
    with pytest.raises(LocalChainError):
        await substrate.compose(("Balances", "transfer_keep_alive", {}))


async def test_metagraph_runtime_call_is_pinned_to_the_asked_block(substrate: LocalSubstrate) -> None:
    head = await substrate.block_number()
    graph = await substrate.runtime_call(
        "SubnetInfoRuntimeApi", "get_metagraph", [2], await substrate.block_hash(head)
    )

    assert graph is not None and graph["block"] == head
    assert graph["hotkeys"] == ["o", "v"] and graph["total_stake"] == [0, 4 * 10**9]
    assert await substrate.runtime_call("SubnetInfoRuntimeApi", "get_metagraph", [9]) is None


async def test_block_hashes_carry_their_number(substrate: LocalSubstrate) -> None:
    block = await substrate.get_block(block_hash=await substrate.block_hash(41))

    assert block is not None and block["header"]["number"] == 41
    assert await substrate.block_hash(41) != await substrate.block_hash(42)
