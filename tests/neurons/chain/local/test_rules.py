"""The local chain's pool and pallet rules, called directly (the SDK's pre-flight would hide most of them)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from neurons.chain.local.records import ChainView, LocalChainConfig, NeuronRow
from neurons.chain.local.rules import Refused, apply_call, reveal_weights

CONFIG = LocalChainConfig(
    netuid=4,
    owner_hotkey="o",
    owner_coldkey="oc",
    genesis_time=0.0,
    weights_rate_limit=10,
    commit_reveal=False,
)
NEURONS = (
    NeuronRow(0, "o", "oc", 0, False, 1),
    NeuronRow(1, "v", "vc", 10**12, True, 1, last_update=95),
    NeuronRow(2, "m", "mc", 0, False, 1),
)
VIEW = ChainView(CONFIG, 100, NEURONS)


def weights(dests: list[int], values: list[int], **extra: Any) -> dict[str, Any]:
    return {"netuid": 4, "mecid": 0, "dests": dests, "weights": values, "version_key": 0, **extra}


def refused(view: ChainView, signer: str, function: str, params: dict[str, Any]) -> Refused:
    with pytest.raises(Refused) as refusal:
        apply_call(view, signer, "SubtensorModule", function, params)
    return refusal.value


def refusal(view: ChainView, signer: str, function: str, params: dict[str, Any]) -> str:
    return refused(view, signer, function, params).name


def test_weights_inside_the_rate_limit_are_refused_by_the_pool_then_accepted() -> None:
    limited = refused(VIEW, "v", "set_mechanism_weights", weights([2], [1]))
    assert (limited.name, limited.at) == ("RateLimitExceeded", "pool")  # never reaches a block

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

    poor = refused(view, "v", "set_mechanism_weights", weights([2], [1]))
    assert (poor.name, poor.at) == ("StakeAmountTooLow", "pool")
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
    old = {**commit, "commit_reveal_version": 3}
    assert (
        refusal(revealing, "v", "commit_timelocked_mechanism_weights", old) == "IncorrectCommitRevealVersion"
    )
    change = apply_call(revealing, "v", "SubtensorModule", "commit_timelocked_mechanism_weights", commit)
    assert change.weights is None and change.last_update == 200 and change.reveal_round == 9


def test_the_local_chain_defaults_to_commit_reveal_as_finney_does() -> None:
    assert LocalChainConfig(netuid=1, owner_hotkey="o", owner_coldkey="oc", genesis_time=0.0).commit_reveal


def test_a_reveal_applies_set_weights_rules_but_neither_the_rate_limit_nor_last_update() -> None:
    revealing = ChainView(replace(CONFIG, commit_reveal=True), 96, NEURONS)  # 1 block after v's commit
    plain = {"dests": [0, 2], "weights": [1, 3], "version_key": 0}

    change = reveal_weights(revealing, "v", plain)

    assert change.weights == ((0, round(65535 / 3)), (2, 65535)) and change.last_update is None
    no_permit = ChainView(
        revealing.config, 96, (NEURONS[0], replace(NEURONS[1], validator_permit=False), NEURONS[2])
    )
    with pytest.raises(Refused, match="NeuronNoValidatorPermit"):
        reveal_weights(no_permit, "v", plain)
    newer = ChainView(replace(revealing.config, weights_version=1), 96, NEURONS)
    with pytest.raises(Refused, match="IncorrectWeightVersionKey"):
        reveal_weights(newer, "v", plain)


def test_the_owner_sets_weights_without_stake_or_permit() -> None:
    strict = ChainView(replace(CONFIG, min_stake=1.0), 200, NEURONS)  # the owner (uid 0) holds neither

    change = apply_call(strict, "o", "SubtensorModule", "set_mechanism_weights", weights([1, 2], [1, 1]))

    assert change.weights == ((1, 65535), (2, 65535))
    assert refusal(strict, "m", "set_mechanism_weights", weights([2], [1])) == "StakeAmountTooLow"


AXON = {"netuid": 4, "version": 1, "ip": 167772165, "port": 8091, "ip_type": 4, "protocol": 4}


def test_serving_is_checked_by_the_pool_address_port_and_rate() -> None:
    limited = ChainView(
        replace(CONFIG, serving_rate_limit=50), 200, (*NEURONS[:2], replace(NEURONS[2], axon_block=180))
    )
    cases = [
        (VIEW, "m", {**AXON, "port": 0}, "InvalidPort"),
        (VIEW, "m", {**AXON, "ip": 2**32 - 1}, "InvalidIpAddress"),
        (VIEW, "m", {**AXON, "ip_type": 5}, "BadRequest"),
        (limited, "m", AXON, "ServingRateLimitExceeded"),
        (VIEW, "x", AXON, "HotKeyNotRegisteredInNetwork"),
    ]
    for view, signer, params, name in cases:
        refusal_ = refused(view, signer, "serve_axon", params)
        assert (refusal_.name, refusal_.at) == (name, "pool"), params
    change = apply_call(VIEW, "m", "SubtensorModule", "serve_axon", AXON)
    assert change.axon is not None and change.axon["axon_port"] == 8091 and change.axon["axon_block"] == 100
    unset = apply_call(VIEW, "m", "SubtensorModule", "serve_axon", {**AXON, "ip": 0})  # as subtensor
    assert unset.axon is not None and unset.axon["axon_ip"] == 0


def test_loopback_axons_are_refused_as_subtensor_does_unless_the_local_network_is_in_use() -> None:
    loopback_v4 = {**AXON, "ip": 0x7F000001}
    loopback_v6 = {**AXON, "ip": 1, "ip_type": 6}
    in_use = ChainView(replace(CONFIG, loopback_axons=True), 100, NEURONS)

    assert refusal(VIEW, "m", "serve_axon", loopback_v4) == "InvalidIpAddress"
    assert refusal(VIEW, "m", "serve_axon", loopback_v6) == "InvalidIpAddress"
    assert apply_call(in_use, "m", "SubtensorModule", "serve_axon", loopback_v4).axon is not None
    assert apply_call(in_use, "m", "SubtensorModule", "serve_axon", loopback_v6).axon is not None


def test_calls_the_chain_does_not_model_are_filtered() -> None:
    with pytest.raises(Refused, match="CallFiltered"):
        apply_call(VIEW, "v", "Balances", "transfer_keep_alive", {})
