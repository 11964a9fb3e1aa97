"""An in-memory stand-in for the SDK's chain-access seam, reading and writing the local chain file.

``bittensor.Client(substrate=...)`` accepts any object shaped like its ``Substrate`` protocol:
reads return plain decoded values (what the websocket transport yields after SCALE decoding),
writes take a composed call and a signer. This class answers the storage items, runtime API
and constants the SDK's metagraph read and weight/serving intents ask for, from a
``LocalChain``; everything above it (metagraph decoding, weight pre-flight, clipping and u16
quantisation, timelock encryption, signing, result handling) is the SDK's own code.

Nonces are pipelined as the SDK's RPC transport does them: the chain is asked once per
account, then the cached value counts up per signed call until ``clear_nonce_cache_for_account``
(which the SDK calls after a failed submit). The local pool refuses a stale or future nonce, so a
cache left incremented shows as a refusal, not as silence.

It does not import bittensor. The few methods whose contract returns SDK types (balances,
fees, extrinsic results) live in the subclass in ``neurons.chain.local.sdk``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from neurons.chain.local.commitments import MODULE as COMMITMENTS
from neurons.chain.local.reads import STORAGE, commits_by_epoch, metagraph
from neurons.chain.local.records import ChainView, Outcome
from neurons.chain.local.rules import SUPPORTED_CALLS
from neurons.chain.local.state import LocalChain
from neurons.errors import LocalChainError


@dataclass(frozen=True)
class LocalCall:
    """A composed call: the generated builder's (module, function, params), checked against the chain."""

    module: str
    function: str
    params: dict[str, Any]

    @property
    def value(self) -> dict[str, Any]:
        """The call in the transport's decoded shape (what fee filters and explorers read)."""
        args = [{"name": name, "value": value} for name, value in self.params.items()]
        return {"call_module": self.module, "call_function": self.function, "call_args": args}


def _block_of(block_hash: str | None) -> int | None:
    """The block a hash of ``LocalSubstrate.block_hash_of`` names (its last 8 bytes); None: the head."""
    return int(block_hash[-16:], 16) if block_hash else None


def _unsupported(what: str) -> LocalChainError:
    return LocalChainError(f"{what} is not supported by the local chain")


class LocalSubstrate:
    """The read side and call composition of the SDK's ``Substrate`` seam over a ``LocalChain``."""

    def __init__(self, chain: LocalChain) -> None:
        """Serve ``chain``'s state; blocking file access runs in worker threads."""
        self.chain = chain
        self.token_symbols: dict[int, str] = {}
        self._nonces: dict[str, int] = {}
        self._nonce_lock = asyncio.Lock()

    async def _view(self, block_hash: str | None = None) -> ChainView:
        return await asyncio.to_thread(self.chain.view, _block_of(block_hash))

    def block_hash_of(self, block: int) -> str:
        """Deterministic hash of ``block`` that also carries its number (last 8 bytes)."""
        seed = f"{self.chain.config.genesis_time}:{block}".encode()
        return "0x" + hashlib.sha256(seed).hexdigest()[:48] + f"{block:016x}"

    # Lifecycle ------------------------------------------------------------------
    async def connect(self) -> None:
        """Check the chain file is readable (idempotent)."""
        await asyncio.to_thread(lambda: self.chain.config)
        self.token_symbols = {self.chain.config.netuid: self.chain.config.symbol}

    async def close(self) -> None:
        """Nothing to release: every access opens and closes the file."""

    # Reads ----------------------------------------------------------------------
    async def block_hash(self, block: int | None = None) -> str:
        """Hash of ``block`` (default: the head)."""
        return self.block_hash_of(await self.block_number() if block is None else block)

    async def block_number(self) -> int:
        """The current block, derived from wall time."""
        return await asyncio.to_thread(self.chain.block)

    async def finalized_block_number(self) -> int:
        """Local blocks are final when made."""
        return await self.block_number()

    async def block_time(self) -> float:
        """Seconds per block, as configured."""
        return await asyncio.to_thread(lambda: self.chain.config.block_seconds)

    async def spec_version(self) -> int:
        """A fixed runtime version."""
        return 1

    async def get_block(
        self, block_number: int | None = None, block_hash: str | None = None
    ) -> dict[str, Any] | None:
        """A header (no extrinsic bodies are kept per block)."""
        number = int(block_hash[-16:], 16) if block_hash else block_number
        return self._block(await self.block_number() if number is None else number)

    def _block(self, number: int) -> dict[str, Any]:
        header = {
            "number": number,
            "hash": self.block_hash_of(number),
            "parentHash": self.block_hash_of(number - 1),
        }
        return {"header": header, "extrinsics": []}

    async def query(
        self,
        module: str,
        storage_function: str,
        params: list[Any] | None = None,
        block_hash: str | None = None,
    ) -> Any:
        """One storage item at ``block_hash``'s block (``LocalChain.view``: no history but commitments')."""
        if (module, storage_function) == ("SubtensorModule", "Weights"):
            return await self._weights_row(list(params or []), block_hash)
        if (module, storage_function) == (COMMITMENTS, "CommitmentOf"):
            args = list(params or [])
            if len(args) < 2 or int(args[0]) != self.chain.config.netuid:
                return None
            return await asyncio.to_thread(self.chain.commitment, str(args[1]), _block_of(block_hash))
        read = STORAGE.get((module, storage_function))
        if read is None:
            raise _unsupported(f"storage {module}.{storage_function}")
        return read(await self._view(block_hash), list(params or []))

    async def _weights_row(self, params: list[Any], block_hash: str | None) -> list[tuple[int, int]]:
        """``Weights[netuid, uid]``: one validator's (dest, u16 value) pairs."""
        if len(params) < 2 or int(params[0]) != self.chain.config.netuid:
            return []
        rows = await asyncio.to_thread(self.chain.weights, _block_of(block_hash))
        return dict(rows).get(int(params[1]), [])

    async def map_has_entries(
        self, module: str, storage_function: str, params: list[Any], block_hash: str | None = None
    ) -> bool:
        """Whether a storage map has any entry under ``params``."""
        return bool(await self.query_map(module, storage_function, params, block_hash))

    async def query_map(
        self,
        module: str,
        storage_function: str,
        params: list[Any] | None = None,
        block_hash: str | None = None,
    ) -> list[tuple[Any, Any]]:
        """A storage map as (key, value) pairs: weights, uids, commitments (at ``block_hash``)."""
        item, args = (module, storage_function), list(params or [])
        view = await self._view(block_hash)
        on_subnet = bool(args) and int(args[0]) == view.config.netuid
        if item == ("SubtensorModule", "Weights"):
            weights = await asyncio.to_thread(self.chain.weights, view.block) if on_subnet else {}
            return sorted(weights.items())
        if item == ("SubtensorModule", "Uids"):
            return [(n.hotkey, n.uid) for n in view.neurons] if on_subnet else []
        if item == ("SubtensorModule", "TimelockedWeightCommits"):
            pending = await asyncio.to_thread(self.chain.pending_commits, view.block) if on_subnet else []
            return commits_by_epoch(view, pending)
        if item == ("SubtensorModule", "TokenSymbol"):
            return [(view.config.netuid, list(view.config.symbol.encode()))]
        if item == (COMMITMENTS, "CommitmentOf"):
            return await asyncio.to_thread(self.chain.commitments, _block_of(block_hash)) if on_subnet else []
        if module == COMMITMENTS:  # RevealedCommitments: timelocked commitments are not modelled
            return []
        raise _unsupported(f"storage map {module}.{storage_function}")

    async def query_batch(
        self, module: str, storage_function: str, param_sets: list[list[Any]], block_hash: str | None = None
    ) -> list[Any]:
        """One storage map for many keys."""
        return [await self.query(module, storage_function, params, block_hash) for params in param_sets]

    async def runtime_call(
        self, api: str, method: str, params: list[Any], block_hash: str | None = None
    ) -> Any:
        """The runtime APIs the SDK's metagraph read uses."""
        if (api, method) != ("SubnetInfoRuntimeApi", "get_metagraph"):
            raise _unsupported(f"runtime API {api}.{method}")
        view = await self._view(block_hash)
        if not params or int(params[0]) != view.config.netuid:
            return None
        return metagraph(view)

    async def constant(self, module: str, name: str) -> Any:
        """Pallet constants: the block time."""
        if (module, name) == ("Aura", "SlotDuration"):
            return round(await self.block_time() * 1000)
        raise _unsupported(f"constant {module}.{name}")

    async def decode_scale(self, type_string: str, data: Any) -> Any:
        """Calls here are not SCALE-encoded."""
        raise _unsupported("SCALE decoding")

    async def blocks(self, *, finalized: bool = False) -> AsyncIterator[dict[str, Any]]:
        """New block headers as wall time produces them."""
        last = await self.block_number()
        while True:
            await asyncio.sleep(await self.block_time() / 4)
            number = await self.block_number()
            if number > last:
                last = number
                yield self._block(number)

    async def events(self, block_hash: str | None = None) -> list[dict[str, Any]]:
        """Per-block events are not kept; results carry their own."""
        return []

    # Calls ----------------------------------------------------------------------
    async def compose(self, call: Any) -> LocalCall:
        """Check a generated ``(module, function, params)`` call against what the chain models."""
        module, function, params = call
        if (module, function) not in SUPPORTED_CALLS:
            raise _unsupported(f"call {module}.{function}")
        return LocalCall(module, function, dict(params))

    async def estimate_weight(self, call: Any, keypair: Any) -> dict[str, Any]:
        """Dispatch weight is not metered locally."""
        return {"ref_time": 0, "proof_size": 0}

    async def account_next_index(self, address: str) -> int:
        """The next nonce to sign with: asked of the chain once, then counted up locally (as the SDK)."""
        async with self._nonce_lock:
            if address in self._nonces:
                self._nonces[address] += 1
            else:
                self._nonces[address] = await asyncio.to_thread(self.chain.extrinsic_count, address)
            return self._nonces[address]

    def clear_nonce_cache_for_account(self, address: str) -> None:
        """Forget the cached nonce: the next call asks the chain again."""
        self._nonces.pop(address, None)

    async def mev_next_key(self) -> bytes | None:
        """No MEV shield on the local chain."""
        return None

    async def sign_extrinsic(self, call: Any, keypair: Any, *, nonce: int, period: int) -> tuple[bytes, str]:
        """Raw extrinsic bytes exist only on a real chain."""
        raise _unsupported("raw extrinsic signing")

    def multisig_account(self, signatories: list[str], threshold: int) -> Any:
        """Multisig is not modelled."""
        raise _unsupported("multisig")

    def signing_payload(self, call: LocalCall, signer: str, nonce: int) -> bytes:
        """The bytes a signer signs for ``call``: canonical JSON of call, signer, nonce, genesis."""
        body = {
            "call": call.value,
            "signer": signer,
            "nonce": nonce,
            "genesis": self.chain.config.genesis_time,
        }
        return json.dumps(body, sort_keys=True, default=lambda b: "0x" + bytes(b).hex()).encode()

    async def dispatch(
        self, call: LocalCall, signer: str, *, nonce: int, sealed: dict[str, Any] | None = None
    ) -> Outcome:
        """Apply a call signed at ``nonce`` to the chain file (``sealed``: a commit's plaintext)."""
        return await asyncio.to_thread(
            self.chain.dispatch, signer, call.module, call.function, call.params, nonce=nonce, sealed=sealed
        )

    # Write paths the local chain does not model (they exist for hardware and multisig signers).
    async def find_extrinsic(self, extrinsic_hash: str, block_hash: str) -> Any:
        """Not modelled."""
        raise _unsupported("extrinsic lookup")

    async def prepare(
        self,
        call: Any,
        *,
        address: str,
        crypto_type: int = 1,
        nonce: int | None = None,
        period: int | None = None,
        tip: int = 0,
        metadata_hash: bytes | None = None,
    ) -> Any:
        """Not modelled."""
        raise _unsupported("out-of-process signing")

    async def submit_signature(
        self,
        unsigned: Any,
        signature: bytes | str,
        *,
        wait_for_inclusion: bool = True,
        wait_for_finalization: bool = True,
    ) -> Any:
        """Not modelled."""
        raise _unsupported("out-of-process signing")

    async def submit_signed(
        self,
        extrinsic: Any,
        keypair: Any,
        *,
        wait_for_inclusion: bool = True,
        wait_for_finalization: bool = True,
    ) -> Any:
        """Not modelled."""
        raise _unsupported("pre-signed extrinsics")

    async def submit_multisig(
        self,
        call: Any,
        keypair: Any,
        multisig_account: Any,
        *,
        wait_for_inclusion: bool = True,
        wait_for_finalization: bool = True,
    ) -> Any:
        """Not modelled."""
        raise _unsupported("multisig")
