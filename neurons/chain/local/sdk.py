"""The local chain as an SDK ``Substrate``: the bittensor-free local substrate plus signed submission."""

from __future__ import annotations

import inspect
from typing import Any

import bittensor as bt
from bittensor.sp_core import verify as verify_signature

from neurons.chain.local.records import Outcome
from neurons.chain.local.substrate import LocalCall, LocalSubstrate


class LocalSdkSubstrate(LocalSubstrate):
    """The local chain as an SDK ``Substrate``: the reads of ``LocalSubstrate`` plus signed submission."""

    def balance(self, rao: int, netuid: int = 0) -> bt.Balance:
        """An amount in rao, tagged with the subnet's symbol."""
        return bt.Balance(int(rao), netuid, self.token_symbols.get(netuid) if netuid else None)

    async def estimate_fee(self, call: Any, keypair: Any) -> bt.Balance:
        """The local chain charges no fees."""
        return bt.Balance.from_rao(0)

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
        """Sign ``call`` with ``keypair``, check the signature, and apply it: one block, final at once."""
        composed = call if isinstance(call, LocalCall) else await self.compose(call)
        address = str(keypair.ss58_address)
        payload = self.signing_payload(composed, address, await self.account_next_index(address))
        signature = keypair.sign(payload)
        if inspect.isawaitable(signature):
            signature = await signature
        # The chain checks the signer really holds the key, as the transaction pool would.
        if not verify_signature(payload, bytes(signature), address, keypair.crypto_type):
            return bt.ExtrinsicResult(
                success=False, message="bad signature", error=bt.ChainError("bad signature")
            )
        return self._result(await self.dispatch(composed, address))

    def _result(self, outcome: Outcome) -> bt.ExtrinsicResult:
        block_hash = self.block_hash_of(outcome.block)
        extrinsic_id = f"{outcome.block}-{outcome.index:04d}"
        if outcome.success:
            return bt.ExtrinsicResult(
                True, "Success", block_hash, extrinsic_id, fee=bt.Balance(0), events=outcome.events
            )
        error = bt.ChainError(outcome.message, outcome.error)
        return bt.ExtrinsicResult(False, outcome.message, block_hash, extrinsic_id, error=error)
