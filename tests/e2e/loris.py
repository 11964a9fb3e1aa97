"""A slow-loris for the e2e tests: half-open requests held on a port from many loopback source addresses.

Linux routes all of 127.0.0.0/8 to the loopback, so sockets bound to 127.0.0.2... are other
peers than the honest processes on 127.0.0.1. What the server closes (refused at accept,
evicted, timed out) is opened again, as an attacker would, at most once per ``reopen_seconds``.
"""

from __future__ import annotations

import selectors
import socket
import threading
import time
from dataclasses import dataclass, field

HALF_HEAD = b"POST /v1/tools/find_product HTTP/1.1\r\nHost: x\r\n"  # never the blank line


def loopback_peers(count: int, first: int = 2) -> tuple[str, ...]:
    """``count`` loopback source addresses from 127.0.0.<first> on."""
    return tuple(f"127.0.{n // 256}.{n % 256}" for n in range(first, first + count))


@dataclass
class SlowLoris:
    """``sockets`` half-open requests on ``port`` spread over ``peers``, held from a thread until stopped."""

    port: int
    sockets: int
    peers: tuple[str, ...]
    reopen_seconds: float = 5.0
    opened: int = 0  # connections made (first and again)
    closed: int = 0  # closed by the server: refused at accept, evicted or timed out
    failed: int = 0  # connects that did not complete (not listening yet, backlog full)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> SlowLoris:
        self._thread = threading.Thread(target=self._run, name=f"loris-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)

    def _open(self, selector: selectors.BaseSelector, peer: str) -> bool:
        try:
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=5, source_address=(peer, 0))
        except OSError:
            self.failed += 1
            return False
        try:
            sock.sendall(HALF_HEAD)
        except OSError:  # refused and closed before the line went out
            sock.close()
            self.closed += 1
            return True
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ, peer)
        self.opened += 1
        return True

    def _run(self) -> None:
        selector = selectors.DefaultSelector()
        waiting = [self.peers[i % len(self.peers)] for i in range(self.sockets)]
        try:
            while not self._stop.is_set():
                again = []
                for peer in waiting:
                    if self._stop.is_set() or not self._open(selector, peer):
                        again.append(peer)
                waiting = again
                until = time.monotonic() + self.reopen_seconds
                while not self._stop.is_set() and (left := until - time.monotonic()) > 0:
                    for key, _ in selector.select(timeout=left):
                        selector.unregister(key.fileobj)
                        key.fileobj.close()  # type: ignore[union-attr]
                        self.closed += 1
                        waiting.append(key.data)
        finally:
            for key in list(selector.get_map().values()):
                key.fileobj.close()  # type: ignore[union-attr]
            selector.close()
