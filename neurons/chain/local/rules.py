"""The local chain's pallet rules: which signed calls are accepted, and the state change they make.

Pure functions over a ``ChainView``: they check a call the way subtensor does (for the calls a
subnet node makes) and return the change to store, or raise ``Refused`` with the chain's own
error name, so the SDK classifies a local refusal exactly as it would on finney. A refusal says
where it happened: in the transaction pool (subtensor's transaction extension: a weight call
under the minimum stake or inside the rate limit, any invalid ``serve_axon``), where the call
never reaches a block and consumes no nonce, or in a block, where it is logged as a failed
extrinsic. The subnet owner's hotkey needs neither stake nor a validator permit to set weights,
as on chain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from neurons.chain.local.records import ChainView, LocalChainConfig, NeuronRow
from neurons.errors import NeuronError

U16_MAX = 65535
RAO_PER_UNIT = 10**9
COMMIT_REVEAL_VERSION = 4  # the timelocked commit format the chain accepts (the SDK's default)
_LOOPBACK = {4: 0x7F000001, 6: 1}  # 127.0.0.1 and ::1: the only addresses subtensor refuses by value

# (pallet, call) pairs the local chain models; composing anything else is refused up front.
SUPPORTED_CALLS = frozenset(
    {
        ("SubtensorModule", "set_mechanism_weights"),
        ("SubtensorModule", "set_weights"),
        ("SubtensorModule", "commit_timelocked_mechanism_weights"),
        ("SubtensorModule", "commit_timelocked_weights"),
        ("SubtensorModule", "serve_axon"),
        ("Commitments", "set_commitment"),  # its rules: neurons.chain.local.commitments
    }
)
RefusedAt = Literal["pool", "block"]


class Refused(NeuronError):
    """A call the chain rejects: ``name`` is the chain's error name, ``at`` where it was refused.

    Pool refusals carry the name subtensor's ``CustomTransactionError`` gives them
    (``StakeAmountTooLow``, ``RateLimitExceeded``, ``InvalidIpAddress``...); block refusals the
    pallet error (``SettingWeightsTooFast``, ``NeuronNoValidatorPermit``...).
    """

    def __init__(self, name: str, message: str, *, at: RefusedAt = "block") -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message
        self.at: RefusedAt = at


@dataclass(frozen=True)
class Change:
    """What an accepted call writes: the caller's last-update block, weights, axon, a commit; events."""

    uid: int
    last_update: int | None = None
    weights: tuple[tuple[int, int], ...] | None = None
    axon: dict[str, int] | None = None
    reveal_round: int | None = None  # set when the call is a timelocked commit to keep
    events: list[dict[str, Any]] = field(default_factory=list)


def _event(name: str, **attributes: Any) -> dict[str, Any]:
    return {"event": {"module_id": "SubtensorModule", "event_id": name, "attributes": attributes}}


def _is_owner(config: LocalChainConfig, neuron: NeuronRow) -> bool:
    return neuron.hotkey == config.owner_hotkey


def _has_min_stake(config: LocalChainConfig, neuron: NeuronRow | None) -> bool:
    if neuron is not None and _is_owner(config, neuron):
        return True  # the owner's hotkey sets weights whatever its stake
    return (neuron.stake_rao if neuron else 0) >= round(config.min_stake * RAO_PER_UNIT)


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


def _within_rate(view: ChainView, neuron: NeuronRow) -> bool:
    limit = view.config.weights_rate_limit
    return not (limit and neuron.last_update > 0 and view.block - neuron.last_update < limit)


def _rate_message(view: ChainView, neuron: NeuronRow) -> str:
    limit = view.config.weights_rate_limit
    return f"weights were last set at block {neuron.last_update}; the limit is {limit} blocks"


def _check_weights_pool(view: ChainView, signer: str, function: str) -> None:
    """Subtensor's CheckWeights and CheckRateLimits: refused before any block."""
    neuron = view.by_hotkey(signer)
    if not _has_min_stake(view.config, neuron):
        raise Refused("StakeAmountTooLow", "stake is below the minimum to set weights", at="pool")
    plain = function in ("set_mechanism_weights", "set_weights")
    if plain and not view.config.commit_reveal and neuron is not None and not _within_rate(view, neuron):
        raise Refused("RateLimitExceeded", _rate_message(view, neuron), at="pool")


def _set_weights(
    view: ChainView, neuron: NeuronRow, params: Mapping[str, Any], *, revealing: bool = False
) -> Change:
    """``set_weights`` as the pallet dispatches it; ``revealing``: applied by a commit's reveal."""
    config = view.config
    dests = [int(u) for u in params.get("dests") or []]
    values = [int(w) for w in params.get("weights") or []]
    if config.commit_reveal and not revealing:
        raise Refused("CommitRevealEnabled", "this subnet takes timelocked commits, not plain weights")
    if len(dests) != len(values):
        raise Refused("WeightVecNotEqualSize", "uids and weights differ in length")
    if len(dests) > len(view.neurons):
        raise Refused("UidsLengthExceedUidsInSubNet", "more uids than the subnet holds")
    if not _has_min_stake(config, neuron):
        raise Refused("NotEnoughStakeToSetWeights", "stake is below the minimum to set weights")
    if int(params.get("version_key", 0)) < config.weights_version:
        raise Refused("IncorrectWeightVersionKey", f"version_key must be >= {config.weights_version}")
    if not config.commit_reveal and not _within_rate(view, neuron):
        raise Refused("SettingWeightsTooFast", _rate_message(view, neuron))
    self_weight = dests == [neuron.uid]  # a lone self-weight is exempt from the vector rules
    if not (self_weight or neuron.validator_permit or _is_owner(config, neuron)):
        raise Refused("NeuronNoValidatorPermit", "setting non-self weights needs a validator permit")
    if len(set(dests)) != len(dests):
        raise Refused("DuplicateUids", "a uid appears twice")
    if any(u < 0 or u >= len(view.neurons) for u in dests) or any(v < 0 or v > U16_MAX for v in values):
        raise Refused("UidVecContainInvalidOne", "a uid is not in the metagraph or a weight is not u16")
    if not self_weight:
        _check_weight_vector(view, values)
    return Change(
        neuron.uid,
        # With commit-reveal the commit set last_update; a reveal leaves it alone.
        last_update=None if config.commit_reveal else view.block,
        weights=_max_upscale(dests, values),
        events=[_event("WeightsSet", netuid=config.netuid, uid=neuron.uid)],
    )


def _check_weight_vector(view: ChainView, values: Sequence[int]) -> None:
    config = view.config
    if len(values) < min(config.min_allowed_weights, len(view.neurons)):
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
    if int(params.get("commit_reveal_version", COMMIT_REVEAL_VERSION)) != COMMIT_REVEAL_VERSION:
        raise Refused("IncorrectCommitRevealVersion", f"the chain takes version {COMMIT_REVEAL_VERSION}")
    if not _within_rate(view, neuron):
        raise Refused("CommittingWeightsTooFast", _rate_message(view, neuron))
    reveal_round = int(params.get("reveal_round", 0))
    # The commit stays sealed: it opens at the first block after the drand round is published.
    return Change(
        neuron.uid,
        last_update=view.block,
        reveal_round=reveal_round,
        events=[_event("TimelockedWeightsCommitted", uid=neuron.uid, reveal_round=reveal_round)],
    )


def _check_serving(view: ChainView, signer: str, params: Mapping[str, Any]) -> None:
    """Subtensor's ``validate_serve_axon``, run by the transaction pool: refused before any block."""
    config = view.config
    neuron = view.by_hotkey(signer)
    if int(params.get("netuid", -1)) != config.netuid or neuron is None:
        raise Refused("HotKeyNotRegisteredInNetwork", f"hotkey {signer} is not registered here", at="pool")
    ip, ip_type = int(params.get("ip", 0)), int(params.get("ip_type", 4))
    if ip_type not in (4, 6):
        raise Refused("BadRequest", f"ip_type {ip_type} is neither 4 nor 6", at="pool")  # InvalidIpType
    # As subtensor: 0 is allowed (an axon not serving yet); all-ones and loopback are not.
    loopback = ip == _LOOPBACK[ip_type] and not config.loopback_axons
    if ip < 0 or ip >= (2**32 - 1 if ip_type == 4 else 2**128 - 1) or loopback:
        raise Refused("InvalidIpAddress", f"{ip} is not an address the chain serves", at="pool")
    limit = config.serving_rate_limit
    if limit and neuron.axon_block > 0 and view.block - neuron.axon_block < limit:
        message = f"served at block {neuron.axon_block}; the limit is {limit}"
        raise Refused("ServingRateLimitExceeded", message, at="pool")
    if not 0 < int(params.get("port", 0)) < 65536:
        raise Refused("InvalidPort", "the port must be in 1..65535", at="pool")


def _serve_axon(view: ChainView, signer: str, params: Mapping[str, Any]) -> Change:
    _check_serving(view, signer, params)
    neuron = view.by_hotkey(signer)
    if neuron is None:  # _check_serving refused it already
        raise Refused("HotKeyNotRegisteredInNetwork", f"hotkey {signer} is not registered here", at="pool")
    axon = {
        "axon_ip": int(params.get("ip", 0)),
        "axon_port": int(params.get("port", 0)),
        "axon_ip_type": int(params.get("ip_type", 4)),
        "axon_protocol": int(params.get("protocol", 0)),
        "axon_version": int(params.get("version", 0)),
        "axon_block": view.block,
    }
    return Change(
        neuron.uid, axon=axon, events=[_event("AxonServed", netuid=view.config.netuid, hotkey=neuron.hotkey)]
    )


def apply_call(view: ChainView, signer: str, module: str, function: str, params: Mapping[str, Any]) -> Change:
    """Check one signed call against the pool's and the pallet's rules; the change it makes.

    Raises:
        Refused: the chain rejects the call (``name`` says why, ``at`` where).
    """
    if (module, function) not in SUPPORTED_CALLS:
        raise Refused("CallFiltered", f"{module}.{function} is not modelled by the local chain", at="pool")
    if function == "serve_axon":
        return _serve_axon(view, signer, params)
    _check_weights_pool(view, signer, function)
    neuron = _caller(view, signer, params)
    if function in ("set_mechanism_weights", "set_weights"):
        return _set_weights(view, neuron, params)
    return _commit_weights(view, neuron, params)


def reveal_weights(view: ChainView, signer: str, plaintext: Mapping[str, Any]) -> Change:
    """Apply a revealed commit's weights (``dests``, ``weights``, ``version_key``) as the chain does.

    The reveal runs ``set_weights``'s checks at the reveal block (stake, version key, validator
    permit, vector rules), but not the rate limit, and leaves ``last_update`` to the commit.

    Raises:
        Refused: the reveal fails (subtensor then drops the commit without a trace on chain).
    """
    params = {"netuid": view.config.netuid, "mecid": 0, **plaintext}
    return _set_weights(view, _caller(view, signer, params), params, revealing=True)
