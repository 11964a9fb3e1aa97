"""The local chain's pallet rules, called directly (the SDK's pre-flight would hide most of them)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from neurons.chain.local.records import ChainView, LocalChainConfig, NeuronRow
from neurons.chain.local.rules import Refused, apply_call

CONFIG = LocalChainConfig(
    netuid=4, owner_hotkey="o", owner_coldkey="oc", genesis_time=0.0, weights_rate_limit=10
)
NEURONS = (
    NeuronRow(0, "o", "oc", 0, False, 1),
    NeuronRow(1, "v", "vc", 10**12, True, 1, last_update=95),
    NeuronRow(2, "m", "mc", 0, False, 1),
)
VIEW = ChainView(CONFIG, 100, NEURONS)


def weights(dests: list[int], values: list[int], **extra: Any) -> dict[str, Any]:
    return {"netuid": 4, "mecid": 0, "dests": dests, "weights": values, "version_key": 0, **extra}


def refusal(view: ChainView, signer: str, function: str, params: dict[str, Any]) -> str:
    with pytest.raises(Refused) as refused:
        apply_call(view, signer, "SubtensorModule", function, params)
    return refused.value.name


def test_weights_inside_the_rate_limit_are_refused_then_accepted() -> None:
    assert refusal(VIEW, "v", "set_mechanism_weights", weights([2], [1])) == "SettingWeightsTooFast"

    change = apply_call(
        replace(VIEW, block=105), "v", "SubtensorModule", "set_mechanism_weights", weights([0, 2], [1, 3])
    )

    assert change.uid == 1 and change.last_update == 105
    assert change.weights == ((0, round(65535 / 3)), (2, 65535))


@pytest.mark.parametrize(
    ("params", "error"),
    [
        (weights([2, 2], [1, 1]), "DuplicateUids"),
        (weights([7], [1]), "UidVecContainInvalidOne"),
        (weights([2], [1, 2]), "WeightVecNotEqualSize"),
        (weights([2], [1], netuid=5), "SubnetNotExists"),
        (weights([2], [1], mecid=1), "MechanismDoesNotExist"),
    ],
)
def test_malformed_weight_calls_are_refused(params: dict[str, Any], error: str) -> None:
    assert refusal(replace(VIEW, block=200), "v", "set_mechanism_weights", params) == error


def test_chain_limits_on_the_weight_vector() -> None:
    strict = ChainView(replace(CONFIG, min_allowed_weights=2, max_weights_limit=40000), 200, NEURONS)

    assert refusal(strict, "v", "set_mechanism_weights", weights([2], [1])) == "WeightVecLengthIsLow"
    assert refusal(strict, "v", "set_mechanism_weights", weights([0, 2], [1, 9])) == "MaxWeightExceeded"
    assert apply_call(
        strict, "v", "SubtensorModule", "set_mechanism_weights", weights([0, 2], [1, 1])
    ).weights


def test_without_a_permit_only_a_self_weight_is_allowed() -> None:
    assert refusal(VIEW, "m", "set_mechanism_weights", weights([0, 1], [1, 1])) == "NeuronNoValidatorPermit"
    assert apply_call(VIEW, "m", "SubtensorModule", "set_mechanism_weights", weights([2], [5])).weights == (
        (2, 65535),
    )


def test_stake_and_version_requirements() -> None:
    view = ChainView(replace(CONFIG, min_stake=2000.0, weights_version=3), 200, NEURONS)

    assert refusal(view, "v", "set_mechanism_weights", weights([2], [1])) == "NotEnoughStakeToSetWeights"
    rich = ChainView(replace(CONFIG, weights_version=3), 200, NEURONS)
    assert (
        refusal(rich, "v", "set_mechanism_weights", weights([2], [1], version_key=2))
        == "IncorrectWeightVersionKey"
    )


def test_commits_and_plain_weights_follow_the_subnet_mode() -> None:
    commit = {"netuid": 4, "mecid": 0, "commit": b"sealed", "reveal_round": 9, "commit_reveal_version": 4}
    revealing = ChainView(replace(CONFIG, commit_reveal=True), 200, NEURONS)

    assert refusal(VIEW, "v", "commit_timelocked_mechanism_weights", commit) == "CommitRevealDisabled"
    assert refusal(revealing, "v", "set_mechanism_weights", weights([2], [1])) == "CommitRevealEnabled"
    change = apply_call(revealing, "v", "SubtensorModule", "commit_timelocked_mechanism_weights", commit)
    assert change.weights is None and change.last_update == 200


def test_serving_checks_address_port_and_rate() -> None:
    axon = {"netuid": 4, "version": 1, "ip": 167772165, "port": 8091, "ip_type": 4, "protocol": 4}
    limited = ChainView(
        replace(CONFIG, serving_rate_limit=50), 200, (*NEURONS[:2], replace(NEURONS[2], axon_block=180))
    )

    assert refusal(VIEW, "m", "serve_axon", {**axon, "ip": 0}) == "InvalidIpAddress"
    assert refusal(VIEW, "m", "serve_axon", {**axon, "port": 0}) == "InvalidPort"
    assert refusal(limited, "m", "serve_axon", axon) == "ServingRateLimitExceeded"
    assert refusal(VIEW, "x", "serve_axon", axon) == "HotKeyNotRegisteredInSubNet"
    change = apply_call(VIEW, "m", "SubtensorModule", "serve_axon", axon)
    assert change.axon is not None and change.axon["axon_port"] == 8091 and change.axon["axon_block"] == 100


def test_calls_the_chain_does_not_model_are_filtered() -> None:
    with pytest.raises(Refused, match="CallFiltered"):
        apply_call(VIEW, "v", "Balances", "transfer_keep_alive", {})
