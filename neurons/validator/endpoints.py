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
``64:ff9b:1::/48`` (RFC 8215) is private by definition. The guard itself is
``arena.httpguard.address_refusal``: the inference gateway checks its upstreams with it.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from urllib.parse import urlsplit

from arena.httpguard import ADDRESS_CAUSES, AddressCause, AddressPolicy, address_policy, address_refusal
from neurons import metrics
from neurons.chain.chaintypes import MetagraphSnapshot

logger = logging.getLogger(__name__)

EndpointCause = AddressCause
ENDPOINT_CAUSES = ADDRESS_CAUSES
EndpointPolicy = AddressPolicy


def endpoint_policy(network: str, allowed: Sequence[str] = ()) -> EndpointPolicy:
    """The policy for ``network``: the local network queries any address; others, global ones and ``allowed``.

    Raises:
        ValueError: an entry of ``allowed`` is not a network (``10.0.0.0/8``, ``fd00::/8``).
    """
    return address_policy(allowed, any_address=network == "local")


def endpoint_refusal(endpoint: str, policy: EndpointPolicy) -> EndpointCause | None:
    """Why the validator will not POST to ``endpoint`` (``http://ip:port``), or None when it will."""
    # The chain stores IP literals; a name is not ours to resolve (``not_an_ip``).
    return address_refusal(urlsplit(endpoint).hostname or "", policy)


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
