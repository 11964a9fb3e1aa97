"""The local chain as an SDK ``Substrate``: the bittensor-free local substrate plus signed submission."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Sequence
from typing import Any

import bittensor as bt
from bittensor import timelock
from bittensor.intents.weights import clip_to_max_weight, normalize
from bittensor.sp_core import verify as verify_signature

from neurons.chain.local.records import Outcome
from neurons.chain.local.rules import U16_MAX
from neurons.chain.local.substrate import LocalCall, LocalSubstrate

_COMMITS = frozenset({"commit_timelocked_mechanism_weights", "commit_timelocked_weights"})


class LocalSdkSubstrate(LocalSubstrate):
    """The local chain as an SDK ``Substrate``: the reads of ``LocalSubstrate`` plus signed submission.

    A timelocked commit cannot be opened here (that needs drand's signature of its round), so
    the submitter hands over what it commits with ``hand_weights`` before submitting; the chain
    keeps that plaintext, quantised as the SDK quantised the ciphertext, and applies it at the
    reveal round.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """As ``LocalSubstrate``."""
        super().__init__(*args, **kwargs)
        self._handed: dict[str, tuple[list[int], list[float], int]] = {}

    def balance(self, rao: int, netuid: int = 0) -> bt.Balance:
        """An amount in rao, tagged with the subnet's symbol."""
        return bt.Balance(int(rao), netuid, self.token_symbols.get(netuid) if netuid else None)

    async def estimate_fee(self, call: Any, keypair: Any) -> bt.Balance:
        """The local chain charges no fees."""
        return bt.Balance.from_rao(0)

    def hand_weights(
        self, hotkey: str, uids: Sequence[int], weights: Sequence[float], version_key: int
    ) -> None:
        """The weight vector ``hotkey``'s next commit seals (kept for its reveal)."""
        self._handed[hotkey] = ([int(u) for u in uids], [float(w) for w in weights], int(version_key))

    async def _sealed(self, hotkey: str, call: LocalCall) -> dict[str, Any] | None:
        if call.function not in _COMMITS or hotkey not in self._handed:
            return None
        uids, weights, version_key = self._handed.pop(hotkey)
        view = await asyncio.to_thread(self.chain.view)
        me = view.by_hotkey(hotkey)
        # The SDK's conform step (SetWeights.build): clip to MaxWeightsLimit unless a lone
        # self-weight, then max-upscale and quantise to u16, dropping zeros.
        limit = view.config.max_weights_limit
        if limit < U16_MAX and not (me is not None and uids == [me.uid]):
            weights = clip_to_max_weight(weights, limit / U16_MAX)
        dests, values = normalize(uids, weights)
        # The SDK picked the round from the system clock; place it on the chain's clock (a test's
        # may run ahead), so that the commit opens the same number of blocks after it was made.
        skew = self.chain.now() - time.time()
        reveal_at = timelock.reveal_time(int(call.params["reveal_round"])).timestamp() + skew
        plaintext = {"dests": dests, "weights": values, "version_key": version_key}
        return {"reveal_at": reveal_at, "plaintext": plaintext}

    async def submit(
        self,
        call: Any,
        keypair: Any,
        *,
        nonce: int | None = None,
        period: int | None = 128,  # the SDK's default era
        wait_for_inclusion: bool = True,
        wait_for_finalization: bool = True,
    ) -> bt.ExtrinsicResult:
        """Sign ``call`` with ``keypair``, check the signature, and apply it: one block, final at once.

        As the SDK's RPC substrate: the nonce comes from the pipelined cache unless given, and a
        submission that fails before reaching a block clears the account's cached nonce.
        """
        composed = call if isinstance(call, LocalCall) else await self.compose(call)
        address = str(keypair.ss58_address)
        try:
            signed_at = await self.account_next_index(address) if nonce is None else nonce
            payload = self.signing_payload(composed, address, signed_at)
            signature = keypair.sign(payload)
            if inspect.isawaitable(signature):
                signature = await signature
        except Exception:
            self.clear_nonce_cache_for_account(address)
            raise
        # The chain checks the signer really holds the key, as the transaction pool would.
        if not verify_signature(payload, bytes(signature), address, keypair.crypto_type):
            self.clear_nonce_cache_for_account(address)
            return bt.ExtrinsicResult(
                success=False, message="bad signature", error=bt.ChainError("bad signature", "BadProof")
            )
        try:
            outcome = await self.dispatch(
                composed, address, nonce=signed_at, sealed=await self._sealed(address, composed)
            )
        except Exception:
            self.clear_nonce_cache_for_account(address)
            raise
        if not outcome.included:
            self.clear_nonce_cache_for_account(address)
        return self._result(outcome)

    def _result(self, outcome: Outcome) -> bt.ExtrinsicResult:
        if outcome.block is None:  # refused by the pool: no block, no extrinsic id
            error = bt.ChainError(outcome.message, outcome.error)
            return bt.ExtrinsicResult(False, outcome.message, error=error)
        block_hash = self.block_hash_of(outcome.block)
        extrinsic_id = f"{outcome.block}-{outcome.index or 0:04d}"
        if outcome.success:
            return bt.ExtrinsicResult(
                True, "Success", block_hash, extrinsic_id, fee=bt.Balance(0), events=outcome.events
            )
        error = bt.ChainError(outcome.message, outcome.error)
        return bt.ExtrinsicResult(False, outcome.message, block_hash, extrinsic_id, error=error)
