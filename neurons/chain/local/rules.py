"""The local chain's pallet rules: which signed calls are accepted, and the state change they make.

Pure functions over a ``ChainView``: they check a call the way subtensor's pallet does (for the
three calls a subnet node makes) and return the change to store, or raise ``Refused`` with the
chain's own error name, so the SDK classifies a local refusal exactly as it would on finney.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from neurons.chain.local.records import ChainView, NeuronRow
from neurons.errors import NeuronError

U16_MAX = 65535
RAO_PER_UNIT = 10**9

# (pallet, call) pairs the local chain models; composing anything else is refused up front.
SUPPORTED_CALLS = frozenset(
    {
        ("SubtensorModule", "set_mechanism_weights"),
        ("SubtensorModule", "set_weights"),
        ("SubtensorModule", "commit_timelocked_mechanism_weights"),
        ("SubtensorModule", "commit_timelocked_weights"),
        ("SubtensorModule", "serve_axon"),
    }
)


class Refused(NeuronError):
    """A call the chain rejects: ``name`` is the pallet error name (e.g. SettingWeightsTooFast)."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message


@dataclass(frozen=True)
class Change:
    """What an accepted call writes: the caller's last-update block, weights, axon; its events."""

    uid: int
    last_update: int | None = None
    weights: tuple[tuple[int, int], ...] | None = None
    axon: dict[str, int] | None = None
    events: list[dict[str, Any]] = field(default_factory=list)


def _event(name: str, **attributes: Any) -> dict[str, Any]:
    return {"event": {"module_id": "SubtensorModule", "event_id": name, "attributes": attributes}}


def _caller(view: ChainView, signer: str, params: Mapping[str, Any]) -> NeuronRow:
    netuid = int(params.get("netuid", -1))
    if netuid != view.config.netuid:
        raise Refused("SubnetNotExists", f"subnet {netuid} does not exist on this chain")
    if int(params.get("mecid", 0)) != 0:
        raise Refused("MechanismDoesNotExist", "only mechanism 0 exists on the local chain")
    neuron = view.by_hotkey(signer)
    if neuron is None:
        raise Refused("HotKeyNotRegisteredInSubNet", f"hotkey {signer} is not registered on subnet {netuid}")
    return neuron


def _check_rate(view: ChainView, neuron: NeuronRow, error: str) -> None:
    limit = view.config.weights_rate_limit
    if limit and neuron.last_update > 0 and view.block - neuron.last_update < limit:
        raise Refused(
            error, f"weights were last set at block {neuron.last_update}; the limit is {limit} blocks"
        )


def _set_weights(view: ChainView, neuron: NeuronRow, params: Mapping[str, Any]) -> Change:
    config = view.config
    dests = [int(u) for u in params.get("dests") or []]
    values = [int(w) for w in params.get("weights") or []]
    if config.commit_reveal:
        raise Refused("CommitRevealEnabled", "this subnet takes timelocked commits, not plain weights")
    if len(dests) != len(values):
        raise Refused("WeightVecNotEqualSize", "uids and weights differ in length")
    if neuron.stake_rao < round(config.min_stake * RAO_PER_UNIT):
        raise Refused("NotEnoughStakeToSetWeights", "stake is below the minimum to set weights")
    if int(params.get("version_key", 0)) < config.weights_version:
        raise Refused("IncorrectWeightVersionKey", f"version_key must be >= {config.weights_version}")
    _check_rate(view, neuron, "SettingWeightsTooFast")
    if len(set(dests)) != len(dests):
        raise Refused("DuplicateUids", "a uid appears twice")
    if any(u < 0 or u >= len(view.neurons) for u in dests) or any(v < 0 or v > U16_MAX for v in values):
        raise Refused("UidVecContainInvalidOne", "a uid is not in the metagraph or a weight is not u16")
    if dests != [neuron.uid]:  # a lone self-weight is exempt, as on chain
        _check_weight_vector(view, neuron, values)
    return Change(
        neuron.uid,
        last_update=view.block,
        weights=_max_upscale(dests, values),
        events=[_event("WeightsSet", netuid=config.netuid, uid=neuron.uid)],
    )


def _check_weight_vector(view: ChainView, neuron: NeuronRow, values: Sequence[int]) -> None:
    config = view.config
    if not neuron.validator_permit:
        raise Refused("NeuronNoValidatorPermit", "setting non-self weights needs a validator permit")
    if len([v for v in values if v > 0]) < min(config.min_allowed_weights, len(view.neurons)):
        raise Refused("WeightVecLengthIsLow", f"at least {config.min_allowed_weights} weights are required")
    total = sum(values)
    if total > 0 and max(values) * U16_MAX > config.max_weights_limit * total:
        raise Refused("MaxWeightExceeded", "the largest weight exceeds max_weights_limit")


def _max_upscale(dests: Sequence[int], values: Sequence[int]) -> tuple[tuple[int, int], ...]:
    # The pallet stores weights max-upscaled, so the largest non-zero weight is u16::MAX.
    top = max(values, default=0)
    if top == 0:
        return ()
    return tuple((d, round(v * U16_MAX / top)) for d, v in zip(dests, values, strict=True) if v > 0)


def _commit_weights(view: ChainView, neuron: NeuronRow, params: Mapping[str, Any]) -> Change:
    if not view.config.commit_reveal:
        raise Refused("CommitRevealDisabled", "this subnet takes plain weights, not commits")
    _check_rate(view, neuron, "CommittingWeightsTooFast")
    # The commit stays sealed here: opening it needs the drand signature of its reveal round.
    return Change(
        neuron.uid,
        last_update=view.block,
        events=[
            _event("TimelockedWeightsCommitted", uid=neuron.uid, reveal_round=params.get("reveal_round"))
        ],
    )


def _serve_axon(view: ChainView, neuron: NeuronRow, params: Mapping[str, Any]) -> Change:
    ip, port, ip_type = int(params.get("ip", 0)), int(params.get("port", 0)), int(params.get("ip_type", 4))
    if ip_type not in (4, 6) or ip <= 0 or ip >= 2 ** (32 if ip_type == 4 else 128):
        raise Refused("InvalidIpAddress", "the ip is not a routable address of its type")
    if not 0 < port < 65536:
        raise Refused("InvalidPort", "the port must be in 1..65535")
    limit = view.config.serving_rate_limit
    if limit and neuron.axon_block > 0 and view.block - neuron.axon_block < limit:
        raise Refused(
            "ServingRateLimitExceeded", f"served at block {neuron.axon_block}; the limit is {limit}"
        )
    axon = {
        "axon_ip": ip,
        "axon_port": port,
        "axon_ip_type": ip_type,
        "axon_protocol": int(params.get("protocol", 0)),
        "axon_version": int(params.get("version", 0)),
        "axon_block": view.block,
    }
    return Change(
        neuron.uid, axon=axon, events=[_event("AxonServed", netuid=view.config.netuid, hotkey=neuron.hotkey)]
    )


def apply_call(view: ChainView, signer: str, module: str, function: str, params: Mapping[str, Any]) -> Change:
    """Check one signed call against the chain's rules and return the change it makes.

    Raises:
        Refused: the chain rejects the call (the error name says why).
    """
    if (module, function) not in SUPPORTED_CALLS:
        raise Refused("CallFiltered", f"{module}.{function} is not modelled by the local chain")
    neuron = _caller(view, signer, params)
    if function in ("set_mechanism_weights", "set_weights"):
        return _set_weights(view, neuron, params)
    if function.startswith("commit_timelocked"):
        return _commit_weights(view, neuron, params)
    return _serve_axon(view, neuron, params)
