"""Which advertised miner addresses the validator will POST to: global ones, unless a network is allowed.

A miner's endpoint is whatever IP it served on chain. The validator sends it a signed request
carrying an episode token, so an address inside the validator's own networks (loopback, a
private range, link-local cloud metadata, multicast) would turn every round into requests to
services behind the validator's firewall. On finney and test only globally routable addresses
are queried; a private testnet names its ranges in an explicit allowlist
(``ValidatorSettings.miner_networks``); the local network (every process on one host) allows
all. A refused miner is not queried at all: it is left out of the round like one that serves
nothing (``arena_miner_endpoint_refusals_total{cause}`` counts them, once per round each).

An IPv6 address that carries an IPv4 one is judged by the IPv4 address it reaches: IPv4-mapped
(``::ffff:a.b.c.d``), NAT64 (``64:ff9b::/96``, which a NAT64 gateway in the validator's network
forwards to the embedded address) and 6to4 (``2002::/16``). The local-use NAT64 prefix
``64:ff9b:1::/48`` (RFC 8215) is private by definition.
"""

from __future__ import annotations

import ipaddress
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from neurons import metrics
from neurons.chain.chaintypes import MetagraphSnapshot

logger = logging.getLogger(__name__)

EndpointCause = Literal[
    "not_an_ip", "unspecified", "loopback", "link_local", "multicast", "private", "reserved"
]
ENDPOINT_CAUSES: tuple[EndpointCause, ...] = (
    "not_an_ip",
    "unspecified",
    "loopback",
    "link_local",
    "multicast",
    "private",
    "reserved",
)
IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")


@dataclass(frozen=True)
class EndpointPolicy:
    """What the validator queries: ``any_address`` (the local network), else global and allowlisted ones."""

    any_address: bool = False
    allowed: tuple[IpNetwork, ...] = ()


def endpoint_policy(network: str, allowed: Sequence[str] = ()) -> EndpointPolicy:
    """The policy for ``network``: the local network queries any address; others, global ones and ``allowed``.

    Raises:
        ValueError: an entry of ``allowed`` is not a network (``10.0.0.0/8``, ``fd00::/8``).
    """
    networks = tuple(ipaddress.ip_network(entry, strict=False) for entry in allowed)
    return EndpointPolicy(any_address=network == "local", allowed=networks)


def reached(address: IpAddress) -> IpAddress:
    """The address a packet to ``address`` reaches: the IPv4 one an IPv6 address embeds, or itself."""
    if isinstance(address, ipaddress.IPv4Address):
        return address
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped  # ::ffff:10.0.0.1 is 10.0.0.1
    if address in NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)  # 64:ff9b::a00:1 reaches 10.0.0.1
    if address.sixtofour is not None:
        return address.sixtofour  # 2002:a00:1:: reaches 10.0.0.1
    return address


def endpoint_refusal(endpoint: str, policy: EndpointPolicy) -> EndpointCause | None:
    """Why the validator will not POST to ``endpoint`` (``http://ip:port``), or None when it will."""
    try:
        address = ipaddress.ip_address(urlsplit(endpoint).hostname or "")
    except ValueError:
        return "not_an_ip"  # the chain stores IP literals; anything else is not ours to resolve
    target = reached(address)
    if policy.any_address or any(a in net for a in (address, target) for net in policy.allowed):
        return None
    if address in NAT64_LOCAL:
        return "private"
    address = target
    if address.is_unspecified:
        return "unspecified"
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link_local"
    if address.is_multicast:
        return "multicast"
    if address.is_private:  # RFC 1918, ULA, and the other special-purpose ranges (TEST-NET, 240.0.0.0/4...)
        return "private"
    return None if address.is_global else "reserved"


def screen_endpoints(snapshot: MetagraphSnapshot, policy: EndpointPolicy) -> MetagraphSnapshot:
    """``snapshot`` with every refused endpoint removed (those miners are not queried); counted and logged."""
    refused: Counter[EndpointCause] = Counter()
    neurons = []
    for neuron in snapshot.neurons:
        cause = endpoint_refusal(neuron.endpoint, policy) if neuron.endpoint else None
        if cause is not None:
            refused[cause] += 1
            logger.debug(
                "miner_endpoint_refused uid=%d endpoint=%s cause=%s", neuron.uid, neuron.endpoint, cause
            )
            neuron = neuron.model_copy(update={"endpoint": None})
        neurons.append(neuron)
    for cause, count in refused.items():
        metrics.MINER_ENDPOINT_REFUSALS.labels(cause).inc(count)
    if refused:
        causes = " ".join(f"{cause}={count}" for cause, count in sorted(refused.items()))
        logger.warning("miner_endpoints_refused block=%d %s", snapshot.block, causes)
    return snapshot.model_copy(update={"neurons": tuple(neurons)})
