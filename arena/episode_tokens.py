"""Episode tokens: HMAC capabilities for one episode of one miner on one task, until they expire."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from dataclasses import dataclass

from arena.errors import TokenExpired, TokenInvalid
from arena.jsonkeys import unique_object
from arena.types import canonical_json

_TOKEN_VERSION = "at1"
# Domain separation: a MAC over these bytes can never be confused with another use of the secret.
_MAC_CONTEXT = b"shopping-arena/episode-token/v1\n"
_MAX_TOKEN_CHARS = 2048
MIN_SECRET_BYTES = 16


@dataclass(frozen=True)
class TokenClaims:
    """What an episode token vouches for (``expires_at`` in unix seconds)."""

    episode_id: str
    miner_hotkey: str
    task_id: str
    expires_at: int


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class EpisodeTokens:
    """Mints and verifies capability tokens: ``at1.<claims>.<HMAC-SHA256>``, base64url, unpadded."""

    def __init__(self, secret: bytes) -> None:
        if len(secret) < MIN_SECRET_BYTES:
            raise ValueError(f"the token secret must be at least {MIN_SECRET_BYTES} bytes")
        self._secret = secret

    def _mac(self, payload: bytes) -> bytes:
        return hmac.new(self._secret, _MAC_CONTEXT + payload, hashlib.sha256).digest()

    def mint(self, claims: TokenClaims) -> str:
        """Return a token for ``claims``."""
        payload = canonical_json(
            {"e": claims.episode_id, "h": claims.miner_hotkey, "t": claims.task_id, "x": claims.expires_at}
        ).encode("utf-8")
        return f"{_TOKEN_VERSION}.{_b64(payload)}.{_b64(self._mac(payload))}"

    def claims(self, token: str) -> TokenClaims:
        """Return the claims of an authentic token, ignoring its expiry.

        Raises:
            TokenInvalid: the token is malformed or its MAC does not verify.
        """
        parts = token.split(".") if len(token) <= _MAX_TOKEN_CHARS else []
        if len(parts) != 3 or parts[0] != _TOKEN_VERSION:
            raise TokenInvalid("malformed episode token")
        try:
            payload, mac = _unb64(parts[1]), _unb64(parts[2])
        except (binascii.Error, ValueError):
            raise TokenInvalid("malformed episode token") from None
        if not hmac.compare_digest(mac, self._mac(payload)):
            raise TokenInvalid("episode token signature does not verify")
        return _read_claims(payload)

    def verify(self, token: str, *, now: float) -> TokenClaims:
        """Return the claims of an authentic, unexpired token.

        Raises:
            TokenInvalid: malformed or forged.
            TokenExpired: authentic but ``now`` is past its expiry.
        """
        claims = self.claims(token)
        if now >= claims.expires_at:
            raise TokenExpired(f"episode token expired at {claims.expires_at}")
        return claims


_CLAIM_KEYS = frozenset({"e", "h", "t", "x"})


def _read_claims(payload: bytes) -> TokenClaims:
    """The claims of an authentic payload; ``TokenInvalid`` when they are not the four we mint.

    Only the secret's holder can make a MAC verify, but a payload minted by another version (or a
    leaked secret) must still be refused as a token, not crash the request as a 500.
    """
    try:
        body = json.loads(payload, object_pairs_hook=unique_object)
    except (ValueError, RecursionError):
        raise TokenInvalid("episode token claims are not a JSON object") from None
    if not isinstance(body, dict) or body.keys() != _CLAIM_KEYS:
        raise TokenInvalid("episode token claims are not the expected fields")
    texts = (body["e"], body["h"], body["t"])
    if not all(isinstance(text, str) and text for text in texts):
        raise TokenInvalid("episode token claims hold a field that is not text")
    if isinstance(body["x"], bool) or not isinstance(body["x"], int):
        raise TokenInvalid("episode token claims hold an expiry that is not an integer")
    return TokenClaims(episode_id=body["e"], miner_hotkey=body["h"], task_id=body["t"], expires_at=body["x"])
