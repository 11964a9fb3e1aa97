"""Wallets through the bittensor SDK: load one, create an unencrypted one for local networks, register it."""

from __future__ import annotations

from pathlib import Path

import bittensor as bt

from neurons.chain.local.state import register

Wallet = bt.Wallet


def load_wallet(name: str, hotkey: str, path: str | Path) -> Wallet:
    """The wallet ``name``/``hotkey`` under ``path``; fails early if its hotkey file is missing."""
    wallet = bt.Wallet(name, hotkey, str(Path(path).expanduser()))
    if not wallet.hotkey_file.exists_on_device():
        raise FileNotFoundError(f"no hotkey {hotkey!r} in wallet {name!r} under {path}")
    return wallet


def create_wallet(directory: Path, name: str, hotkey: str = "default") -> Wallet:
    """Create (or reuse) an unencrypted coldkey and hotkey under ``directory`` — for local networks only.

    No password prompt and no mnemonic printed: these keys guard nothing of value.
    """
    wallet = bt.Wallet(name, hotkey, str(directory))
    if not wallet.coldkey_file.exists_on_device():
        wallet.create_new_coldkey(use_password=False, suppress=True)
    if not wallet.hotkey_file.exists_on_device():
        wallet.create_new_hotkey(use_password=False, suppress=True)
    return wallet


def hotkey_of(wallet: Wallet) -> str:
    """The wallet's hotkey ss58, read from the public key file where there is one."""
    keypair = wallet.hotkeypub if wallet.hotkeypub_file.exists_on_device() else wallet.hotkey
    return str(keypair.ss58_address)


def register_wallet(path: Path, wallet: Wallet, *, stake: float = 0.0, validator_permit: bool = False) -> int:
    """Register ``wallet``'s hotkey and coldkey on the local chain at ``path``; returns the uid."""
    return register(
        path,
        hotkey_of(wallet),
        str(wallet.coldkeypub.ss58_address),
        stake=stake,
        validator_permit=validator_permit,
    )
