"""What the local chain answers the SDK's reads with: storage items, maps and the metagraph runtime API.

Pure functions over a ``ChainView`` producing the shapes the websocket transport yields after
SCALE decoding (amounts in rao, ids as integers), so the SDK's decoding above runs unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from neurons.chain.local.records import ChainView, CommitRecord, NeuronRow

StorageRead = Callable[[ChainView, list[Any]], Any]


def _neuron(view: ChainView, params: list[Any], index: int = 1) -> NeuronRow | None:
    key = params[index] if len(params) > index else None
    if isinstance(key, int):
        return view.neurons[key] if 0 <= key < len(view.neurons) else None
    return view.by_hotkey(str(key))


def _on_subnet(read: StorageRead, default: Any = None) -> StorageRead:
    # Per-subnet items are keyed by netuid first; other subnets do not exist here.
    def guarded(view: ChainView, params: list[Any]) -> Any:
        return read(view, params) if params and int(params[0]) == view.config.netuid else default

    return guarded


def epoch(view: ChainView) -> tuple[int, int]:
    """(``LastEpochBlock``, ``SubnetEpochIndex``) at the view's block: subtensor's stateful schedule."""
    return view.config.last_epoch_block(view.block), view.config.epoch_index(view.block)


def _axon(n: NeuronRow) -> dict[str, int]:
    return {
        "block": n.axon_block,
        "version": n.axon_version,
        "ip": n.axon_ip,
        "port": n.axon_port,
        "ip_type": n.axon_ip_type,
        "protocol": n.axon_protocol,
        "placeholder1": 0,
        "placeholder2": 0,
    }


STORAGE: dict[tuple[str, str], StorageRead] = {
    ("SubtensorModule", "NetworksAdded"): _on_subnet(lambda v, p: True, False),
    ("SubtensorModule", "SubnetworkN"): _on_subnet(lambda v, p: len(v.neurons), 0),
    ("SubtensorModule", "Uids"): _on_subnet(lambda v, p: getattr(_neuron(v, p), "uid", None)),
    ("SubtensorModule", "Keys"): _on_subnet(lambda v, p: getattr(_neuron(v, p), "hotkey", None)),
    ("SubtensorModule", "Axons"): _on_subnet(lambda v, p: _axon(n) if (n := _neuron(v, p)) else None),
    ("SubtensorModule", "ValidatorPermit"): _on_subnet(
        lambda v, p: [n.validator_permit for n in v.neurons], []
    ),
    ("SubtensorModule", "LastUpdate"): _on_subnet(lambda v, p: [n.last_update for n in v.neurons], []),
    ("SubtensorModule", "CommitRevealWeightsEnabled"): _on_subnet(lambda v, p: v.config.commit_reveal, False),
    ("SubtensorModule", "WeightsSetRateLimit"): _on_subnet(lambda v, p: v.config.weights_rate_limit, 0),
    ("SubtensorModule", "WeightsVersionKey"): _on_subnet(lambda v, p: v.config.weights_version, 0),
    ("SubtensorModule", "MinAllowedWeights"): _on_subnet(lambda v, p: v.config.min_allowed_weights, 0),
    ("SubtensorModule", "MaxWeightsLimit"): _on_subnet(lambda v, p: v.config.max_weights_limit, None),
    ("SubtensorModule", "MaxAllowedUids"): _on_subnet(lambda v, p: v.config.max_uids, 0),
    ("SubtensorModule", "ServingRateLimit"): _on_subnet(lambda v, p: v.config.serving_rate_limit, 0),
    ("SubtensorModule", "SubnetEpochConsensus"): _on_subnet(lambda v, p: "Yuma"),
    ("SubtensorModule", "Tempo"): _on_subnet(lambda v, p: v.config.tempo, 0),
    ("SubtensorModule", "RevealPeriodEpochs"): _on_subnet(lambda v, p: v.config.reveal_period_epochs, 0),
    ("SubtensorModule", "LastEpochBlock"): _on_subnet(lambda v, p: epoch(v)[0], 0),
    ("SubtensorModule", "SubnetEpochIndex"): _on_subnet(lambda v, p: epoch(v)[1], 0),
    ("SubtensorModule", "BlocksSinceLastStep"): _on_subnet(lambda v, p: v.block - epoch(v)[0], 0),
    ("SubtensorModule", "PendingEpochAt"): _on_subnet(lambda v, p: 0, 0),
    ("SubtensorModule", "SubnetOwner"): _on_subnet(lambda v, p: v.config.owner_coldkey),
    ("SubtensorModule", "SubnetOwnerHotkey"): _on_subnet(lambda v, p: v.config.owner_hotkey),
    ("Timestamp", "Now"): lambda v, p: round(
        (v.config.genesis_time + (v.block - 1) * v.config.block_seconds) * 1000
    ),
}


def metagraph(view: ChainView) -> dict[str, Any]:
    """``SubnetInfoRuntimeApi.get_metagraph`` as the transport decodes it (amounts in rao)."""
    config, neurons, count = view.config, view.neurons, len(view.neurons)
    last_epoch, _ = epoch(view)
    zeros = [0] * count
    return {
        "netuid": config.netuid,
        "name": list(config.name.encode()),
        "symbol": list(config.symbol.encode()),
        "identity": None,
        "network_registered_at": 1,
        "owner_hotkey": config.owner_hotkey,
        "owner_coldkey": config.owner_coldkey,
        "block": view.block,
        "tempo": config.tempo,
        "last_step": last_epoch,
        "blocks_since_last_step": view.block - last_epoch,
        "num_uids": count,
        "max_uids": config.max_uids,
        "hotkeys": [n.hotkey for n in neurons],
        "coldkeys": [n.coldkey for n in neurons],
        "identities": [None] * count,
        "axons": [_axon(n) for n in neurons],
        "active": [True] * count,
        "validator_permit": [n.validator_permit for n in neurons],
        "last_update": [n.last_update for n in neurons],
        "block_at_registration": [n.registered_at for n in neurons],
        "alpha_stake": [n.stake_rao for n in neurons],
        "tao_stake": zeros,
        "total_stake": [n.stake_rao for n in neurons],
        # Consensus outputs: the local chain runs no Yuma epoch, so these stay zero.
        **{
            key: zeros
            for key in ("rank", "trust", "consensus", "incentives", "dividends", "pruning_score", "emission")
        },
        "tao_in": 0,
        "alpha_in": 0,
        "moving_price": {"bits": 0},
    }


def commits_by_epoch(view: ChainView, commits: list[CommitRecord]) -> list[tuple[int, list[Any]]]:
    """``TimelockedWeightCommits`` as decoded: epoch -> [(hotkey, block, ciphertext, reveal round)]."""
    by_epoch: dict[int, list[Any]] = {}
    for commit in commits:
        # The ciphertext is in the extrinsic log; readers of this map want who and when.
        entry = (commit.signer, commit.block, "0x", commit.reveal_round)
        by_epoch.setdefault(view.config.epoch_index(commit.block), []).append(entry)
    return sorted(by_epoch.items())
