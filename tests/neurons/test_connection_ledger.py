"""A server's books by peer: per-peer caps, the heaviest half-open peer yields at the cap, exemptions."""

from __future__ import annotations

import itertools

import pytest
from pydantic import ValidationError

from neurons.connection_ledger import ConnectionLedger, peer_of
from neurons.settings import ConnectionBounds

BOUNDS = ConnectionBounds(max_connections=10, max_connections_per_peer=6, max_pending_per_peer=4)
_ids = itertools.count()


def conn() -> int:
    return next(_ids)


def test_a_peer_is_its_address_an_ipv6_host_its_64_and_a_unix_socket_none() -> None:
    assert peer_of(("203.0.113.9", 5123)) == "203.0.113.9"
    assert peer_of(("2001:db8:1:2:aaaa::1", 443, 0, 0)) == "2001:db8:1:2::/64"
    assert peer_of(("2001:db8:1:2:bbbb::7", 443, 0, 0)) == peer_of(("2001:db8:1:2:aaaa::1", 443, 0, 0))
    assert peer_of(("::ffff:198.51.100.4", 80, 0, 0)) == "198.51.100.4"
    assert peer_of("/run/arena.sock") is None
    assert peer_of(None) is None


def test_one_peer_is_capped_on_pending_then_on_open_connections_and_others_still_get_in() -> None:
    ledger: ConnectionLedger[int] = ConnectionLedger(BOUNDS)
    pending = [conn() for _ in range(4)]
    assert all(ledger.admit(c, "10.0.0.1").refused is None for c in pending)
    assert ledger.admit(conn(), "10.0.0.1").refused == "peer_pending"
    for c in pending[:2]:  # two sent their heads: room for two more pending
        ledger.heard(c)
    assert ledger.admit(conn(), "10.0.0.1").refused is None
    assert ledger.admit(conn(), "10.0.0.1").refused is None
    assert ledger.open_of("10.0.0.1") == 6 and ledger.pending_of("10.0.0.1") == 4
    for c in pending[2:]:
        ledger.heard(c)
    assert ledger.admit(conn(), "10.0.0.1").refused == "peer_connections"
    assert ledger.admit(conn(), "10.0.0.2").refused is None
    assert ledger.total == 7


def test_at_the_cap_the_heaviest_half_open_peer_yields_its_oldest_connection() -> None:
    ledger: ConnectionLedger[int] = ConnectionLedger(BOUNDS)
    lorises = {peer: [conn() for _ in range(4)] for peer in ("10.0.0.1", "10.0.0.2")}
    for peer, conns in lorises.items():
        for c in conns:
            assert ledger.admit(c, peer).refused is None
    busy = [conn(), conn()]
    for c in busy:  # an honest peer with two requests under way
        ledger.admit(c, "10.0.0.9")
        ledger.heard(c)
    assert ledger.total == 10
    honest = conn()
    admission = ledger.admit(honest, "10.0.0.9")
    assert admission.refused is None and admission.evicted in (lorises["10.0.0.1"][0], lorises["10.0.0.2"][0])
    assert ledger.total == 10 and ledger.open_of("10.0.0.9") == 3
    ledger.release(admission.evicted)  # the server's close comes back later: already off the books
    assert ledger.total == 10
    # Peers at the same pending count never evict each other: the cap holds. Which of the two tied
    # peers yielded above is not fixed (hash order), so 10.0.0.1 may already be at its own cap.
    assert ledger.admit(conn(), "10.0.0.1").refused in ("max_connections", "peer_pending", None)
    assert ledger.total == 10


def test_at_the_cap_with_nothing_pending_a_newcomer_is_refused() -> None:
    ledger: ConnectionLedger[int] = ConnectionLedger(BOUNDS)
    for peer in ("10.0.0.1", "10.0.0.2"):
        for _ in range(5):
            c = conn()
            ledger.admit(c, peer)
            ledger.heard(c)
    assert ledger.admit(conn(), "10.0.0.3").refused == "max_connections"


def test_release_and_heard_keep_the_books_and_are_idempotent() -> None:
    ledger: ConnectionLedger[int] = ConnectionLedger(BOUNDS)
    a, b = conn(), conn()
    ledger.admit(a, "10.0.0.1")
    ledger.admit(b, "10.0.0.1")
    ledger.heard(a)
    ledger.heard(a)
    ledger.release(b)
    ledger.release(b)
    assert (ledger.total, ledger.open_of("10.0.0.1"), ledger.pending_of("10.0.0.1")) == (1, 1, 0)
    ledger.release(a)
    assert (ledger.total, ledger.open_of("10.0.0.1")) == (0, 0)
    # The eviction candidate follows the counts down: nobody pending, nobody to evict.
    full: ConnectionLedger[int] = ConnectionLedger(ConnectionBounds(max_connections=2))
    x, y = conn(), conn()
    full.admit(x, "10.0.0.1")
    full.admit(y, "10.0.0.1")
    full.heard(x)
    full.heard(y)
    assert full.admit(conn(), "10.0.0.2").refused == "max_connections"


def test_exempt_networks_and_unix_peers_skip_the_per_peer_bounds_but_not_the_total() -> None:
    bounds = BOUNDS.model_copy(update={"exempt_networks": ("10.9.0.0/16",)})
    ledger: ConnectionLedger[int] = ConnectionLedger(bounds)
    assert all(ledger.admit(conn(), "10.9.3.4").refused is None for _ in range(8))
    assert ledger.admit(conn(), None).refused is None
    assert ledger.admit(conn(), None).refused is None
    assert ledger.admit(conn(), "10.9.3.4").refused == "max_connections"  # exempt peers are never evicted


def test_the_bounds_refuse_a_network_that_is_not_one() -> None:
    with pytest.raises(ValidationError):
        ConnectionBounds(exempt_networks=("not-a-network",))
