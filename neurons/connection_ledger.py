"""A server's open connections by peer: who may open one more, and whose half-open one yields at the cap.

A peer is a source address (an IPv6 one by its /64: one host holds a whole prefix). Two
per-peer bounds keep one peer, or a few, from taking a port's shared capacity: connections
open at once, and connections *pending*, i.e. that have not yet sent a complete first request
head (what a slow-loris holds). At the port's total cap a newcomer is not simply refused: if
some peer holds at least two more pending connections than the newcomer's peer, that peer's
oldest pending one is evicted to make room, so a peer with few connections (an honest miner's
keep-alive client, a validator calling a miner) gets in while attackers hold the port full.
Peers inside ``exempt_networks`` (a reverse proxy that all traffic comes through) skip the
per-peer bounds and are never evicted; every connection counts toward the total.

The ledger only keeps the books (``neurons.serving`` closes what it says); it is one server's,
touched from that server's event loop only, and every operation is O(1).
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from neurons.settings import ConnectionBounds

C = TypeVar("C", bound=Hashable)
Refusal = Literal["peer_connections", "peer_pending", "max_connections"]
IPV6_PEER_PREFIX = 64


def peer_of(peername: Any) -> str | None:
    """The peer key of a transport's ``peername``: the IPv4 address, an IPv6 /64; None when not IP."""
    if not isinstance(peername, tuple) or not peername or not isinstance(peername[0], str):
        return None  # a Unix socket: no address to tell peers apart by
    try:
        address = ipaddress.ip_address(peername[0].split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/{IPV6_PEER_PREFIX}", strict=False))
    return str(address)


@dataclass(frozen=True)
class Admission(Generic[C]):
    """What ``admit`` decided: refused (and why), or admitted, perhaps by evicting another connection."""

    refused: Refusal | None = None
    evicted: C | None = None


class ConnectionLedger(Generic[C]):
    """The open and pending connections of one server, by peer (see the module docstring)."""

    def __init__(self, bounds: ConnectionBounds) -> None:
        """Empty books under ``bounds`` (its total and per-peer caps and its exempt networks)."""
        self.bounds = bounds
        self._exempt = tuple(ipaddress.ip_network(n, strict=False) for n in bounds.exempt_networks)
        self._peers: dict[C, str | None] = {}  # every open connection -> its peer (None: exempt)
        self._open: Counter[str] = Counter()
        self._pending: dict[str, dict[C, None]] = {}  # peer -> its pending connections, oldest first
        # Peers by how many pending connections they hold, and the most any holds: the eviction
        # candidate is found without a scan (counts move by one, so the maximum is kept exactly).
        self._by_pending: dict[int, set[str]] = {}
        self._most_pending = 0

    @property
    def total(self) -> int:
        """Connections open now."""
        return len(self._peers)

    def open_of(self, peer: str) -> int:
        """Connections ``peer`` holds open."""
        return self._open[peer]

    def pending_of(self, peer: str) -> int:
        """Connections of ``peer`` that have not sent a complete request head yet."""
        return len(self._pending.get(peer, ()))

    def admit(self, conn: C, peer: str | None) -> Admission[C]:
        """Book ``conn`` from ``peer`` (``peer_of``) as open and pending, or say why not.

        A connection evicted to make room is already off the books; the caller closes it.
        """
        key = None if peer is None or self._is_exempt(peer) else peer
        if key is not None:
            if self._open[key] >= self.bounds.max_connections_per_peer:
                return Admission(refused="peer_connections")
            if self.pending_of(key) >= self.bounds.max_pending_per_peer:
                return Admission(refused="peer_pending")
        evicted = None
        if self.total >= self.bounds.max_connections:
            evicted = self._victim(self.pending_of(key) if key is not None else 0)
            if evicted is None:
                return Admission(refused="max_connections")
            self.release(evicted)
        self._peers[conn] = key
        if key is not None:
            self._open[key] += 1
            self._move(key, +1, conn)
        return Admission(evicted=evicted)

    def heard(self, conn: C) -> None:
        """``conn`` sent a complete request head: no longer pending (idempotent)."""
        key = self._peers.get(conn)
        if key is not None and conn in self._pending.get(key, ()):
            self._move(key, -1, conn)

    def release(self, conn: C) -> None:
        """``conn`` closed: off the books (idempotent)."""
        if conn not in self._peers:
            return
        key = self._peers.pop(conn)
        if key is None:
            return
        if conn in self._pending.get(key, ()):
            self._move(key, -1, conn)
        self._open[key] -= 1
        if not self._open[key]:
            del self._open[key]

    def _is_exempt(self, peer: str) -> bool:
        if not self._exempt:
            return False
        try:
            network = ipaddress.ip_network(peer, strict=False)
        except ValueError:
            return False
        return any(network.subnet_of(n) for n in self._exempt if n.version == network.version)  # type: ignore[arg-type]

    def _victim(self, newcomer_pending: int) -> C | None:
        # Only a peer holding at least two more pending connections than the newcomer's yields
        # one: the move narrows the gap, so peers at the same count never evict each other.
        if self._most_pending < newcomer_pending + 2:
            return None
        heaviest = next(iter(self._by_pending[self._most_pending]))
        return next(iter(self._pending[heaviest]))

    def _move(self, key: str, step: Literal[1, -1], conn: C) -> None:
        pending = self._pending.setdefault(key, {})
        before = len(pending)
        if step > 0:
            pending[conn] = None
        else:
            del pending[conn]
        after = len(pending)
        if not pending:
            del self._pending[key]
        if before:
            bucket = self._by_pending[before]
            bucket.discard(key)
            if not bucket:
                del self._by_pending[before]
                if before == self._most_pending and step < 0:
                    self._most_pending = after
        if after:
            self._by_pending.setdefault(after, set()).add(key)
            self._most_pending = max(self._most_pending, after)
