"""Which advertised miner addresses the validator queries: global ones on finney and test, allowlisted
private networks, anything on the local network; refused miners are left out of the round."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from prometheus_client import REGISTRY

from neurons.chain.chaintypes import MetagraphSnapshot, Neuron
from neurons.validator.endpoints import endpoint_policy, endpoint_refusal, screen_endpoints
from neurons.validator.rounds import pick_miners
from neurons.validator.settings import ValidatorSettings

STRICT = endpoint_policy("finney")


@pytest.mark.parametrize(
    ("endpoint", "cause"),
    [
        ("http://203.0.113.9:8091", "private"),  # TEST-NET-3: documentation only, never routed
        ("http://100.64.0.1:8091", "reserved"),  # carrier-grade NAT: neither private nor global
        ("http://8.8.8.8:8091", None),
        ("http://[2606:4700::1111]:8091", None),
        ("http://127.0.0.1:8091", "loopback"),
        ("http://127.8.9.1:8091", "loopback"),
        ("http://[::1]:8091", "loopback"),
        ("http://10.1.2.3:8091", "private"),
        ("http://192.168.0.7:8091", "private"),
        ("http://172.16.4.4:8091", "private"),
        ("http://[fd12::1]:8091", "private"),
        ("http://[::ffff:10.0.0.1]:8091", "private"),  # IPv4-mapped
        # Issue 27, item 8: a NAT64 gateway forwards 64:ff9b::/96 to the IPv4 address it embeds.
        ("http://[64:ff9b::a00:1]:8091", "private"),  # 10.0.0.1
        ("http://[64:ff9b::a9fe:a9fe]:8091", "link_local"),  # 169.254.169.254, cloud metadata
        ("http://[64:ff9b::7f00:1]:8091", "loopback"),  # 127.0.0.1
        ("http://[64:ff9b::808:808]:8091", None),  # 8.8.8.8: a global address through NAT64
        ("http://[64:ff9b:1::a00:1]:8091", "private"),  # the local-use NAT64 prefix (RFC 8215)
        ("http://[2002:a00:1::1]:8091", "private"),  # 6to4 of 10.0.0.1
        ("http://169.254.169.254:8091", "link_local"),  # cloud metadata
        ("http://[fe80::1]:8091", "link_local"),
        ("http://224.0.0.251:8091", "multicast"),
        ("http://[ff02::1]:8091", "multicast"),
        ("http://0.0.0.0:8091", "unspecified"),
        ("http://miner.example:8091", "not_an_ip"),
    ],
)
def test_only_global_addresses_are_queried_on_finney_and_test(endpoint: str, cause: str | None) -> None:
    assert endpoint_refusal(endpoint, STRICT) == cause
    assert endpoint_refusal(endpoint, endpoint_policy("test")) == cause


def test_a_private_testnet_names_its_networks_and_the_local_network_allows_all() -> None:
    testnet = endpoint_policy("ws://10.0.0.2:9944", ["10.0.0.0/8", "fd00::/8"])

    assert endpoint_refusal("http://10.9.9.9:8091", testnet) is None
    assert endpoint_refusal("http://[fd00::5]:8091", testnet) is None
    assert endpoint_refusal("http://192.168.1.1:8091", testnet) == "private"  # not on the list
    assert endpoint_refusal("http://127.0.0.1:8091", endpoint_policy("local")) is None
    with pytest.raises(ValueError):
        endpoint_policy("finney", ["not-a-network"])


def test_the_allowlist_is_a_validated_setting() -> None:
    settings = ValidatorSettings(netuid=1, toolserver_url="http://t:1", miner_networks=("10.0.0.0/8",))
    assert settings.miner_networks == ("10.0.0.0/8",)
    with pytest.raises(ValueError, match="miner_networks"):
        ValidatorSettings(netuid=1, toolserver_url="http://t:1", miner_networks=("10.0.0.300/8",))


def neuron(uid: int, endpoint: str | None) -> Neuron:
    return Neuron(
        uid=uid,
        hotkey=f"hk{uid}",
        coldkey=f"ck{uid}",
        stake=0.0,
        validator_permit=False,
        endpoint=endpoint,
        last_update=0,
    )


def refusals(cause: str) -> float:
    return REGISTRY.get_sample_value("arena_miner_endpoint_refusals_total", {"cause": cause}) or 0.0


def test_refused_miners_are_left_out_of_the_round_and_counted() -> None:
    snapshot = MetagraphSnapshot(
        netuid=1,
        block=50,
        neurons=(
            neuron(0, None),
            neuron(1, "http://8.8.4.4:8091"),
            neuron(2, "http://10.0.0.7:8091"),
            neuron(3, "http://169.254.169.254:80"),
            neuron(4, "http://10.0.0.8:8091"),
        ),
        owner_hotkey="hk0",
        owner_uid=0,
        taken_at=datetime.now(UTC),
    )

    before = {cause: refusals(cause) for cause in ("private", "link_local", "loopback")}
    screened = screen_endpoints(snapshot, STRICT)

    assert [n.endpoint for n in screened.neurons] == [None, "http://8.8.4.4:8091", None, None, None]
    assert [m.uid for m in pick_miners(screened, self_hotkey="v", n=0, key=b"k")] == [1]
    assert refusals("private") == before["private"] + 2
    assert refusals("link_local") == before["link_local"] + 1
    assert refusals("loopback") == before["loopback"]
