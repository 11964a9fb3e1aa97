"""Strict HTTP doors: header count (431), JSON Content-Type (415), call ids; and the outbound address guard.

Each inbound rule is a small function or ASGI wrapper the tool server, the validator and the
miner install alike, so the three ports refuse the same malformed requests the same way. The
connection-level bounds (header and body read time, connections per port) live with the
server that accepts connections (``neurons.serving``); these run once a request has arrived.

Outbound, :func:`address_refusal` says whether the validator may connect to an address a miner
named (its axon's IP, or the upstream of the inference gateway, ``arena.gateway``): global
addresses only, unless a policy allows any address or lists networks, so that a miner cannot
turn the validator into a client of the services behind its firewall (SSRF).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from starlette.types import ASGIApp, Receive, Scope, Send

MAX_REQUEST_HEADERS = 64
"""More header lines than this is a 431: our clients send about a dozen (btauth adds six)."""

_JSON_TYPES = frozenset({"application/json"})


def bounded_headers(app: ASGIApp, max_headers: int = MAX_REQUEST_HEADERS) -> ASGIApp:
    """Wrap ``app`` so an HTTP request with more than ``max_headers`` header lines gets a 431.

    Checked before routing, so no handler (and no signature check) ever sees such a request.
    """

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and len(scope["headers"]) > max_headers:
            await _answer(send, 431, f"more than {max_headers} request headers")
            return
        await app(scope, receive, send)

    return guarded


async def _answer(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def wrong_content_type(content_type: str | None) -> str | None:
    """Why a request body with this ``Content-Type`` is refused (415), or None when it may be JSON.

    A body is JSON: a declared type must be ``application/json`` (parameters such as
    ``charset=utf-8`` allowed; the body must be UTF-8 anyway). A missing header is accepted,
    as ``curl --data-binary`` and the SDKs' bare clients send none.
    """
    if content_type is None or not content_type.strip():
        return None
    media = content_type.split(";", 1)[0].strip().lower()
    if media in _JSON_TYPES:
        return None
    return f"Content-Type {content_type[:64]!r} is not application/json"


def bad_call_id(call_id: str) -> str | None:
    """Why an ``X-Arena-Call-Id`` is refused, or None: only printable ASCII goes into the tool log.

    Headers arrive decoded as latin-1, so a C0 control, DEL, or a byte above 0x7f (read as a C1
    control such as CSI) would reach the log and the judge's view of the call; a model's tool
    call ids are short ASCII tokens.
    """
    if all(" " <= char <= "~" for char in call_id):
        return None
    return "X-Arena-Call-Id holds a character that is not printable ASCII"


AddressCause = Literal[
    "not_an_ip", "unspecified", "loopback", "link_local", "multicast", "private", "reserved"
]
ADDRESS_CAUSES: tuple[AddressCause, ...] = (
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
class AddressPolicy:
    """Where outbound connections may go: ``any_address``, else global addresses and ``allowed`` networks."""

    any_address: bool = False
    allowed: tuple[IpNetwork, ...] = ()


def address_policy(allowed: Sequence[str] = (), *, any_address: bool = False) -> AddressPolicy:
    """A policy: global addresses, the networks ``allowed`` (``10.0.0.0/8``...), and all with ``any_address``.

    Raises:
        ValueError: an entry of ``allowed`` is not a network.
    """
    networks = tuple(ipaddress.ip_network(entry, strict=False) for entry in allowed)
    return AddressPolicy(any_address=any_address, allowed=networks)


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


def address_refusal(host: str, policy: AddressPolicy) -> AddressCause | None:
    """Why the validator will not connect to ``host`` (an IP literal), or None when it will.

    An IPv6 address that carries an IPv4 one is judged by the IPv4 address it reaches
    (IPv4-mapped, NAT64 ``64:ff9b::/96``, 6to4 ``2002::/16``); the local-use NAT64 prefix
    ``64:ff9b:1::/48`` (RFC 8215) is private by definition.
    """
    try:
        address = ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return "not_an_ip"  # names are resolved first, by the caller; anything else is refused
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
