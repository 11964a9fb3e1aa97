"""Signed HTTP between neurons (``bittensor.http_auth``, btauth/1) and signed documents; the replay store."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from bittensor import http_auth
from bittensor.sp_core import verify as verify_signature

from neurons.chain.chaintypes import Admission, AuthFailure, AuthReason
from neurons.chain.noncestore import SqliteNonceStore
from neurons.chain.wallets import Wallet

NonceStore = http_auth.NonceStore

# The SDK raises exactly these classes; anything else it raises is a malformed request.
_AUTH_REASONS: dict[type[http_auth.AuthError], AuthReason] = {
    http_auth.WrongReceiver: "wrong_receiver",
    http_auth.StaleRequest: "stale",
    http_auth.ReplayedRequest: "replay",
    http_auth.BadSignature: "bad_signature",
}


def make_nonce_store(path: Path | None = None, *, retention: float = 60.0) -> NonceStore:
    """A replay store: a SQLite file shared by worker processes, or in memory when ``path`` is None."""
    return SqliteNonceStore(path, retention=retention) if path else http_auth.InMemoryNonceStore(retention)


def sign_request(wallet: Wallet, *, method: str, path: str, body: bytes, receiver: str) -> dict[str, str]:
    """The ``btauth/1`` headers signing ``method path body`` with our hotkey, for ``receiver`` only."""
    return http_auth.sign(wallet.hotkey, method=method, path=path, body=body, receiver_ss58=receiver)


def verify_request(
    headers: Mapping[str, str],
    body: bytes,
    *,
    method: str,
    path: str,
    self_hotkey: str,
    nonce_store: NonceStore,
    max_age: float = http_auth.DEFAULT_MAX_AGE,
    admit: Admission | None = None,
) -> str:
    """Authenticate a signed request addressed to ``self_hotkey``; returns the caller's hotkey.

    Args:
        headers: the request headers (any case).
        body: the raw body bytes as received.
        method: the request method.
        path: the request target as sent, including any query string.
        self_hotkey: our hotkey; requests signed for anyone else (or no one) are refused.
        nonce_store: the replay store (shared across workers, see ``make_nonce_store``).
        max_age: freshness window in seconds.
        admit: optional admission rule (e.g. ``validator_admission(snapshot)``), applied to the
            claimed hotkey before the signature is checked, so strangers cost no verification.

    Raises:
        AuthFailure: with its ``reason`` (one of ``AUTH_REASONS``).
    """
    lowered = {key.lower(): value for key, value in headers.items()}
    if http_auth.HEADER_CRYPTO.lower() in lowered:
        raise AuthFailure(
            "unsupported_crypto", f"{http_auth.HEADER_CRYPTO} is not accepted; sign with sr25519"
        )
    if admit is not None:
        claimed = lowered.get(http_auth.HEADER_HOTKEY.lower())
        if not claimed:
            raise AuthFailure("malformed", f"missing {http_auth.HEADER_HOTKEY}")
        if (reason := admit(claimed)) is not None:
            raise AuthFailure(reason, "caller is not admitted")
    try:
        caller = http_auth.verify(
            lowered,
            body,
            method=method,
            path=path,
            self_hotkey_ss58=self_hotkey,
            max_age=max_age,
            nonce_store=nonce_store,
        )
    except http_auth.AuthError as exc:
        raise AuthFailure(_AUTH_REASONS.get(type(exc), "malformed"), str(exc)) from exc
    return caller.hotkey_ss58


DOCUMENT_CONTEXT = b"arena.document/1\n"
"""Prefixed to every document signature: such a signature never verifies as a request's (btauth/1)."""


def sign_document(wallet: Wallet, payload: bytes) -> str:
    """Our hotkey's sr25519 signature of a published document (``0x`` hex)."""
    return "0x" + bytes(wallet.hotkey.sign(DOCUMENT_CONTEXT + payload)).hex()


def verify_document(payload: bytes, signature: str, hotkey: str) -> bool:
    """Whether ``signature`` (``0x`` hex) is ``hotkey``'s signature of the document ``payload``."""
    try:
        raw = bytes.fromhex(signature.removeprefix("0x"))
        return bool(verify_signature(DOCUMENT_CONTEXT + payload, raw, hotkey))
    except (ValueError, TypeError):
        return False
