"""Round secrets: a validator's hash chain of per-round secrets, its on-chain commitment text, its reveals.

A validator mixes a secret of its own into each world round's seed (``arena.world.seed.round_seed``),
so nobody can compile its world, tasks or gold before it serves them. The secrets form a hash
chain anchored on chain before they are used, and are revealed after:

```
top          = HMAC-SHA256(key, "arena.round-secret/1" || netuid (u16) || anchor round a (u64))
secret(k)    = step^(a + CHAIN_LENGTH - k)(top)           for a < k <= a + CHAIN_LENGTH
step(x)      = sha256("arena.round-secret-step/1" || x)
anchor       = secret(a) = step^CHAIN_LENGTH(top)          # committed before round a + 1 is seeded
```

``secret(k - 1) = step(secret(k))``: revealing the secret of round ``j`` reveals every earlier
round's (``step^(j - k)``) and no later one (that would invert sha256), and anchors them all to
the one commitment: ``step^(j - a)(secret(j)) == anchor``. So one reveal covers any rounds whose
reveal was missed, and the validator cannot choose a round's secret after the commitment (it was
fixed when the anchor was). ``key`` is derived from the validator's one secret setting, so a
restart derives the same chain and finds its anchor on chain.

On chain (the Commitments pallet, one record per hotkey and subnet) the text is
``sa1 <a> <anchor>`` or ``sa1 <a> <anchor> <j> <secret(j)>``: decimal rounds, 32-byte values in
unpadded base64url, at most 113 ASCII bytes for rounds below 10^10 (one ``Raw`` field holds 128).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from dataclasses import dataclass, field

CHAIN_LENGTH = 1 << 14
"""Rounds one anchor covers (over two years of 72-minute worlds); then a new anchor is committed.

A round's secret costs up to this many sha256 calls (about 20 ms on a 2-core dev machine)."""
SECRET_BYTES = 32
PREFIX = "sa1"
_TOP_LABEL = b"arena.round-secret/1"
_STEP_LABEL = b"arena.round-secret-step/1"
_ROUND = r"(0|[1-9][0-9]{0,9})"  # a world round index: block // period, below 10**10
_VALUE = r"([A-Za-z0-9_-]{43})"
_TEXT = re.compile(rf"{PREFIX} {_ROUND} {_VALUE}(?: {_ROUND} {_VALUE})?")
_MAX_ROUND = 10**10 - 1


def step(secret: bytes) -> bytes:
    """One link of the chain, backwards: the secret of the round before."""
    return hashlib.sha256(_STEP_LABEL + secret).digest()


def steps(secret: bytes, n: int) -> bytes:
    """``step`` applied ``n`` times."""
    sha256 = hashlib.sha256
    for _ in range(n):
        secret = sha256(_STEP_LABEL + secret).digest()
    return secret


def encode(value: bytes) -> str:
    """A 32-byte value as unpadded base64url (43 characters)."""
    return base64.urlsafe_b64encode(value).rstrip(b"=").decode("ascii")


def decode(text: str) -> bytes:
    """The 32 bytes of ``encode``'s text.

    Raises:
        ValueError: not 43 base64url characters of 32 bytes.
    """
    try:
        raw = base64.urlsafe_b64decode(text + "=")
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"not base64url: {text!r}") from exc
    if len(raw) != SECRET_BYTES or encode(raw) != text:
        raise ValueError(f"not a {SECRET_BYTES}-byte value: {text!r}")
    return raw


@dataclass(frozen=True)
class SecretChain:
    """One validator's chain of round secrets from anchor round ``anchor_round`` (the key never printed)."""

    key: bytes = field(repr=False)
    netuid: int
    anchor_round: int

    def __post_init__(self) -> None:
        if not 0 <= self.netuid < 1 << 16 or not 0 <= self.anchor_round <= _MAX_ROUND - CHAIN_LENGTH:
            raise ValueError(f"netuid {self.netuid} or anchor round {self.anchor_round} out of range")

    def _top(self) -> bytes:
        message = _TOP_LABEL + self.netuid.to_bytes(2, "big") + self.anchor_round.to_bytes(8, "big")
        return hmac.new(self.key, message, hashlib.sha256).digest()

    def covers(self, round_index: int) -> bool:
        """Whether ``round_index`` has a secret on this chain (after the anchor, within its length)."""
        return self.anchor_round < round_index <= self.anchor_round + CHAIN_LENGTH

    def secret(self, round_index: int) -> bytes:
        """The secret of world round ``round_index``.

        Raises:
            ValueError: the chain does not cover the round.
        """
        if not self.covers(round_index):
            raise ValueError(f"round {round_index} is not on the chain anchored at {self.anchor_round}")
        return steps(self._top(), self.anchor_round + CHAIN_LENGTH - round_index)

    def anchor(self) -> bytes:
        """The value committed on chain: the secret of the anchor round itself."""
        return steps(self._top(), CHAIN_LENGTH)

    def commitment(self, revealed_round: int | None = None) -> Commitment:
        """The record to put on chain: the anchor, and the secret of ``revealed_round`` where given."""
        if revealed_round is None:
            return Commitment(self.anchor_round, self.anchor())
        return Commitment(self.anchor_round, self.anchor(), revealed_round, self.secret(revealed_round))


@dataclass(frozen=True)
class Commitment:
    """One validator's record on chain: its anchor, and the latest round secret it revealed."""

    anchor_round: int
    anchor: bytes = field(repr=False)
    revealed_round: int | None = None
    revealed: bytes | None = field(default=None, repr=False)

    def text(self) -> str:
        """The record's text as it goes on chain."""
        text = f"{PREFIX} {self.anchor_round} {encode(self.anchor)}"
        if self.revealed_round is not None and self.revealed is not None:
            text += f" {self.revealed_round} {encode(self.revealed)}"
        return text

    def reveal_holds(self) -> bool:
        """Whether the revealed secret hashes down to the anchor (vacuously false with no reveal)."""
        j, revealed = self.revealed_round, self.revealed
        if j is None or revealed is None or not self.anchor_round < j <= self.anchor_round + CHAIN_LENGTH:
            return False
        return hmac.compare_digest(steps(revealed, j - self.anchor_round), self.anchor)

    def secret(self, round_index: int) -> bytes | None:
        """The secret of ``round_index`` this record reveals, checked against its anchor (None: none)."""
        j, revealed = self.revealed_round, self.revealed
        if j is None or revealed is None or not self.anchor_round < round_index <= j:
            return None
        if not self.reveal_holds():
            return None
        return steps(revealed, j - round_index)


def parse_commitment(text: str) -> Commitment | None:
    """The record in a commitment's text; None when the text is not one (another subnet use, damage)."""
    match = _TEXT.fullmatch(text.strip())
    if match is None:
        return None
    a, anchor, j, revealed = match.groups()
    try:
        return Commitment(
            anchor_round=int(a),
            anchor=decode(anchor),
            revealed_round=int(j) if j is not None else None,
            revealed=decode(revealed) if revealed is not None else None,
        )
    except ValueError:
        return None
