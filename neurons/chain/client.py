"""The chain through the bittensor SDK (the only module importing it): metagraph, weights, serving, signing.

``open_chain`` builds one SDK ``Client`` per process over a ``Substrate``: the SDK's websocket
RPC substrate for finney, test or a ``ws://`` URL, or an in-memory substrate reading the local
chain file for ``local``, so the SDK's own metagraph decoding, weight pre-flight, quantisation,
commit-reveal and result handling run in both cases. Every call has a timeout; transport
failures are logged, counted (``arena_chain_errors_total``) and raised as ``ChainUnavailable``;
chain refusals come back as a ``Submission``/``WeightSubmission`` with ``success=False``.

A signed call cut off by its timeout (or any cancellation) clears our account's cached nonce:
the SDK pipelines nonces in a per-account cache that it clears only when a submit raises, and
a cancellation is not an exception it sees, so every later extrinsic would carry a future
nonce, parked by the node's pool, until the process restarted.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import math
import sqlite3
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypeVar

import bittensor as bt
from bittensor import settings as bt_settings
from bittensor import timelock
from bittensor.intents import ServeAxon, SetWeights

from neurons import metrics
from neurons.chain.chaintypes import (
    ChainClock,
    ChainCommitment,
    MetagraphSnapshot,
    OnChainWeights,
    Submission,
    WeightRules,
    WeightSubmission,
)
from neurons.chain.local.rules import U16_MAX
from neurons.chain.local.sdk import LocalSdkSubstrate
from neurons.chain.local.state import LocalChain
from neurons.chain.results import error_code, sealed_commits, snapshot_of, submission_of
from neurons.chain.wallets import Wallet, hotkey_of, load_wallet
from neurons.errors import ChainUnavailable, LocalChainError
from neurons.settings import NeuronSettings

logger = logging.getLogger(__name__)
T = TypeVar("T")


class BittensorChain:
    """The ``Chain`` over one SDK client; construct with ``open_chain``. Not shared across processes."""

    def __init__(
        self,
        substrate: bt.Substrate,
        wallet: Wallet | None,
        netuid: int,
        *,
        network: str = "local",
        read_timeout: float = 30.0,
        write_timeout: float = 120.0,
        connect: bool = True,
        wait_for_finalization: bool = False,
    ) -> None:
        """An SDK client over ``substrate``; with ``connect`` it connects at the first call (timed).

        Without a wallet it only reads (``open_reader``): a call that signs raises ``ValueError``.

        ``network`` labels the client (explorer links); the substrate decides where calls go.
        """
        self._substrate = substrate
        self._client = bt.Client(network, substrate=substrate)
        self._wallet = wallet
        self._netuid = netuid
        self._hotkey = hotkey_of(wallet) if wallet is not None else ""
        self._read_timeout = read_timeout
        self._write_timeout = write_timeout
        self._connected = not connect
        self._finalize = wait_for_finalization
        self.errors: Counter[str] = Counter()  # failed calls by operation, for health output

    @property
    def hotkey(self) -> str:
        """Our hotkey (ss58)."""
        return self._hotkey

    @property
    def netuid(self) -> int:
        """The subnet we work on."""
        return self._netuid

    @property
    def wallet(self) -> Wallet:
        """Our wallet, for signing requests.

        Raises:
            ValueError: a reader's chain (``open_reader``) has no wallet.
        """
        if self._wallet is None:
            raise ValueError("this chain client only reads: it was opened without a wallet")
        return self._wallet

    def _forget_nonce(self) -> None:
        """Drop our account's cached next nonce, so the next signed call asks the node again."""
        substrate = self._substrate
        if isinstance(substrate, LocalSdkSubstrate):
            substrate.clear_nonce_cache_for_account(self._hotkey)
        elif isinstance(substrate, bt.RpcSubstrate):
            try:
                substrate.raw.clear_nonce_cache_for_account(self._hotkey)
            except bt.ConnectionNotReady:
                pass  # never connected: nothing cached
        logger.info("nonce_cache_cleared hotkey=%s reason=cancelled_submit", self._hotkey)

    async def _run(
        self, call: str, operation: Callable[[], Awaitable[T]], timeout: float, *, signs: bool = False
    ) -> T:
        try:
            async with asyncio.timeout(timeout):
                if not self._connected:
                    await self._client.connect()
                    self._connected = True
                return await operation()
        except asyncio.CancelledError:
            if signs:  # cancelled from outside (shutdown): the same stale cache as a timeout
                self._forget_nonce()
            raise
        except TimeoutError as exc:
            if signs:
                self._forget_nonce()
            failure = ChainUnavailable(call, "timeout", f"no answer within {timeout:g}s")
            cause: BaseException = exc
        except (bt.RpcConnectionError, bt.ConnectionNotReady, OSError) as exc:
            failure, cause = ChainUnavailable(call, "connection", str(exc) or type(exc).__name__), exc
        except (LocalChainError, sqlite3.Error) as exc:
            failure, cause = ChainUnavailable(call, "local", str(exc)), exc
        except bt.BittensorError as exc:
            failure, cause = ChainUnavailable(call, "chain", str(exc)), exc
        self.errors[call] += 1
        metrics.CHAIN_ERRORS.labels(call=call).inc()
        logger.warning("chain call failed call=%s kind=%s error=%s", call, failure.kind, failure)
        raise failure from cause

    async def snapshot(self) -> MetagraphSnapshot:
        """The metagraph at the head; ``ChainUnavailable`` when unreachable or the subnet is missing."""

        async def read() -> bt.Metagraph:
            graph = await self._client.subnets.metagraph(self._netuid, commitments=False)
            if graph is None:
                raise bt.ChainError(f"subnet {self._netuid} does not exist")
            return graph

        return snapshot_of(await self._run("metagraph", read, self._read_timeout))

    async def block(self) -> int:
        """The current block."""
        return await self._run("block", self._client.block, self._read_timeout)

    async def block_hash(self, block: int) -> str | None:
        """The hash of ``block`` (``0x`` hex), or None while the block is not final yet.

        The finalised head is read first: a block above it may still be reorganised away (two
        validators would then seed different worlds from one round), and a node (the local chain
        too) may answer a header for a number it has not produced at all.
        """

        async def read() -> str | None:
            if block > await self._client.finalized_block():
                return None
            info = await self._client.block_info(block)
            return None if info is None or not info.hash else str(info.hash)

        return await self._run("block_hash", read, self._read_timeout)

    async def commitment(self, hotkey: str, *, block: int | None = None) -> ChainCommitment | None:
        """``hotkey``'s commitment on our subnet at ``block`` (default: the head); None: it has none.

        A read at an old block needs a node that kept that block's state: the SDK retries a
        pruned read on the network's archive endpoints.
        """

        async def read() -> ChainCommitment | None:
            at = await self._client.at(block)
            found = await at.identity.commitment(self._netuid, hotkey)
            if found is None:
                return None
            text, published = str(found.data), int(found.block)
            return ChainCommitment(hotkey=hotkey, text=text, block=published, read_at=at.block)

        return await self._run("commitment", read, self._read_timeout)

    async def set_commitment(self, text: str) -> Submission:
        """Publish ``text`` (at most 128 utf-8 bytes, one ``Raw`` field) as our commitment on the subnet.

        Signed by our hotkey (the pallet keys commitments by the signer); a refusal is returned.

        Raises:
            ValueError: ``text`` is longer than one field holds.
            ChainUnavailable: the chain could not be reached; the outcome is unknown.
        """
        data = text.encode("utf-8")
        if len(data) > 128:
            raise ValueError(f"a commitment field holds 128 bytes, not {len(data)}")
        # One Raw<N> field; the tuple level is the BoundedVec's, as the SCALE codec composes it.
        call = bt.calls.Commitments.set_commitment(
            netuid=self._netuid, info={"fields": [[{f"Raw{len(data)}": "0x" + data.hex()}]]}
        )

        async def submit() -> Submission:
            return await _submitted(
                self._client.submit_call(
                    call,
                    self.wallet,
                    signer="hotkey",
                    wait_for_inclusion=True,
                    wait_for_finalization=self._finalize,
                )
            )

        submission = await self._run("set_commitment", submit, self._write_timeout, signs=True)
        level = logging.INFO if submission.success else logging.WARNING
        logger.log(
            level,
            "set_commitment success=%s block=%s code=%s bytes=%d message=%s",
            submission.success,
            submission.block,
            submission.code,
            len(data),
            submission.message,
        )
        return submission

    async def clock(self) -> ChainClock:
        """The head block's ``Timestamp.Now`` (milliseconds on chain, seconds here) and the block interval."""

        async def read() -> ChainClock:
            now_ms, seconds = await asyncio.gather(
                self._client.query(("Timestamp", "Now"), []), self._client.block_time()
            )
            return ChainClock(timestamp=int(now_ms or 0) / 1000.0, block_seconds=float(seconds))

        return await self._run("clock", read, self._read_timeout)

    async def weight_rules(self) -> WeightRules:
        """The subnet's weight-setting hyperparameters, read at the head."""

        async def read() -> WeightRules:
            items = (
                "Tempo",
                "WeightsSetRateLimit",
                "WeightsVersionKey",
                "MinAllowedWeights",
                "MaxWeightsLimit",
                "RevealPeriodEpochs",
            )
            reads = [self._client.query(("SubtensorModule", item), [self._netuid]) for item in items]
            reveal = self._client.subnets.commit_reveal_enabled(self._netuid)
            *values, commit_reveal, seconds = await asyncio.gather(*reads, reveal, self._client.block_time())
            tempo, rate_limit, version, min_weights, max_limit, reveal_period = (int(v or 0) for v in values)
            return WeightRules(
                tempo=tempo,
                weights_rate_limit=rate_limit,
                weights_version=version,
                min_allowed_weights=min_weights,
                max_weight_share=(max_limit or U16_MAX) / U16_MAX,
                commit_reveal=bool(commit_reveal),
                block_seconds=float(seconds),
                reveal_period_epochs=max(1, reveal_period),
            )

        return await self._run("weight_rules", read, self._read_timeout)

    async def set_weights(
        self, uids: Sequence[int], weights: Sequence[float], *, version_key: int
    ) -> WeightSubmission:
        """Submit weights through the SDK's ``SetWeights`` intent; a refusal is returned, not raised.

        Raises:
            ValueError: lengths differ or a weight is negative or not finite (a bug upstream).
            ChainUnavailable: the chain could not be reached; the outcome is unknown.
        """
        if len(uids) != len(weights) or any(not math.isfinite(w) or w < 0 for w in weights):
            raise ValueError("weights must be finite, non-negative and as many as the uids")
        asked_uids, asked_weights = tuple(int(u) for u in uids), tuple(float(w) for w in weights)

        def submission(outcome: Submission, reveal_round: int | None = None) -> WeightSubmission:
            return WeightSubmission(
                **outcome.model_dump(),
                uids=asked_uids,
                weights=asked_weights,
                version_key=version_key,
                reveal_round=reveal_round,
            )

        async def submit() -> WeightSubmission:
            if isinstance(self._substrate, LocalSdkSubstrate):  # the local chain keeps the plaintext
                self._substrate.hand_weights(self._hotkey, asked_uids, asked_weights, version_key)
            try:
                intent = SetWeights(
                    netuid=self._netuid,
                    uids=list(asked_uids),
                    weights=list(asked_weights),
                    version_key=version_key,
                )
                result = await self._client.execute(
                    intent, self.wallet, wait_for_inclusion=True, wait_for_finalization=self._finalize
                )
            except (bt.RpcConnectionError, bt.ConnectionNotReady):
                raise
            except bt.BittensorError as exc:  # refused before signing (pre-flight or conform)
                return submission(Submission(success=False, message=str(exc), code=error_code(exc)))
            return submission(submission_of(result), result.data.get("reveal_round"))

        outcome = await self._run("set_weights", submit, self._write_timeout, signs=True)
        level = logging.INFO if outcome.success else logging.WARNING
        logger.log(level, "set_weights success=%s block=%s code=%s uids=%d reveal_round=%s message=%s",
                   outcome.success, outcome.block, outcome.code, len(outcome.uids), outcome.reveal_round,
                   outcome.message)  # fmt: skip
        return outcome

    async def weights_on_chain(self) -> OnChainWeights:
        """Our row of the weight matrix, our sealed commits, ``LastUpdate`` and the time, at one block.

        Every read is pinned to the head block read first (``Client.at``): read at different
        blocks, a reveal landing between two reads would show a commit gone and its weights not
        there yet.
        """

        async def read() -> OnChainWeights:
            view = await self._client.at()
            uid_raw, stamp, commits = await asyncio.gather(
                view.query(("SubtensorModule", "Uids"), [self._netuid, self._hotkey]),
                view.query(("Timestamp", "Now")),
                view.query_map(("SubtensorModule", "TimelockedWeightCommits"), [self._netuid]),
            )
            uid = None if uid_raw is None else int(uid_raw)
            row: list[tuple[int, int]] = []
            last_update = 0
            if uid is not None:
                stored, updates = await asyncio.gather(
                    view.query(("SubtensorModule", "Weights"), [self._netuid, uid]),
                    view.query(("SubtensorModule", "LastUpdate"), [self._netuid]),
                )
                row = list(stored or [])
                if isinstance(updates, list | tuple) and uid < len(updates):
                    last_update = int(updates[uid])
            return OnChainWeights(
                block=view.block,
                drand_round=timelock.current_round(int(stamp or 0) / 1000.0),
                uid=uid,
                weights={int(dest): int(value) for dest, value in row},
                sealed=sealed_commits(commits, self._hotkey),
                last_update=last_update,
            )

        return await self._run("weights", read, self._read_timeout)

    async def serve(self, host: str, port: int) -> Submission:
        """Advertise ``host:port`` (an IP literal) as our axon; a no-op when already served there."""
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return Submission(
                success=False, message=f"{host!r} is not an IP address", code="invalid_argument"
            )
        served = f"[{address}]:{port}" if address.version == 6 else f"{address}:{port}"

        async def submit() -> Submission:
            graph = await self._client.subnets.metagraph(self._netuid, commitments=False)
            mine = graph.by_hotkey(self._hotkey) if graph is not None else None
            if graph is not None and mine is not None and mine.axon == served:
                return Submission(success=True, message="already served", block=graph.block)
            intent = ServeAxon(netuid=self._netuid, ip=str(address), port=port)
            return await _submitted(self._client.execute(intent, self.wallet, wait_for_finalization=False))

        submission = await self._run("serve", submit, self._write_timeout, signs=True)
        logger.info("serve endpoint=%s success=%s message=%s", served, submission.success, submission.message)
        return submission

    async def close(self) -> None:
        """Close the SDK connection."""
        if self._connected:
            await self._client.close()


async def _submitted(send: Awaitable[bt.ExtrinsicResult]) -> Submission:
    """A signed call's outcome: a refusal before signing (pre-flight, conform) is returned, not raised.

    A transport failure propagates (``BittensorChain._run`` makes it ``ChainUnavailable``).
    """
    try:
        result = await send
    except (bt.RpcConnectionError, bt.ConnectionNotReady):
        raise
    except bt.BittensorError as exc:
        return Submission(success=False, message=str(exc), code=error_code(exc))
    return submission_of(result)


def open_chain(
    network: str,
    netuid: int,
    *,
    wallet_name: str,
    wallet_hotkey: str,
    wallet_path: str | Path,
    local_chain_path: Path | None = None,
    read_timeout: float = 30.0,
    write_timeout: float = 120.0,
    clock: Callable[[], float] = time.time,
) -> BittensorChain:
    """The chain for ``network``: ``finney``, ``test``, a ``ws://``/``wss://`` URL, or ``local``.

    Build one per process (in ``main()``) and pass it down; nothing connects until the first call.
    ``clock`` drives the local chain's blocks (tests pass a fake one).

    Raises:
        ValueError: unknown network name, or ``local`` without ``local_chain_path``.
        FileNotFoundError: the wallet's hotkey file is missing.
        LocalChainError: the local chain file is missing or holds another subnet.
    """
    wallet = load_wallet(wallet_name, wallet_hotkey, wallet_path)
    if network != "local":
        substrate = rpc_substrate(network)
        return BittensorChain(
            substrate, wallet, netuid, network=network, read_timeout=read_timeout, write_timeout=write_timeout
        )
    if local_chain_path is None:
        raise ValueError("--network local needs the local chain file (local_chain_path)")
    local = LocalChain(local_chain_path, clock=clock)
    if local.config.netuid != netuid:
        raise LocalChainError(f"{local_chain_path} holds subnet {local.config.netuid}, not {netuid}")
    # connect=False: Client.connect() would only cache token symbols in the user's home directory.
    return BittensorChain(
        LocalSdkSubstrate(local),
        wallet,
        netuid,
        read_timeout=read_timeout,
        write_timeout=write_timeout,
        connect=False,
    )


def open_reader(
    network: str,
    netuid: int,
    *,
    local_chain_path: Path | None = None,
    read_timeout: float = 30.0,
    clock: Callable[[], float] = time.time,
) -> BittensorChain:
    """A chain client that only reads (no wallet): for an auditor, who holds no key on the subnet.

    Raises:
        ValueError: unknown network name, or ``local`` without ``local_chain_path``.
        LocalChainError: the local chain file is missing or holds another subnet.
    """
    if network != "local":
        return BittensorChain(
            rpc_substrate(network), None, netuid, network=network, read_timeout=read_timeout
        )
    if local_chain_path is None:
        raise ValueError("--network local needs the local chain file (local_chain_path)")
    local = LocalChain(local_chain_path, clock=clock)
    if local.config.netuid != netuid:
        raise LocalChainError(f"{local_chain_path} holds subnet {local.config.netuid}, not {netuid}")
    return BittensorChain(LocalSdkSubstrate(local), None, netuid, read_timeout=read_timeout, connect=False)


def rpc_substrate(network: str) -> bt.RpcSubstrate:
    """The SDK's websocket substrate for a network name or URL, with the fallbacks ``bt.Client`` would pick.

    Built here rather than inside ``bt.Client`` so that the adapter holds the substrate whose
    nonce cache it must clear after a cancelled submit.

    Raises:
        ValueError: an unknown network name.
    """
    label, endpoint = bt_settings.resolve_endpoint(network)
    fallbacks = [url for url in bt_settings.default_fallback_endpoints(label) if url != endpoint]
    return bt.RpcSubstrate(
        endpoint, fallback_endpoints=fallbacks, archive_endpoints=bt_settings.default_archive_endpoints(label)
    )


def open_neuron_chain(settings: NeuronSettings) -> BittensorChain:
    """``open_chain`` for a miner's or validator's settings (nothing connects until the first call)."""
    return open_chain(
        settings.network,
        settings.netuid,
        wallet_name=settings.wallet_name,
        wallet_hotkey=settings.wallet_hotkey,
        wallet_path=settings.wallet_path,
        local_chain_path=settings.local_chain,
        read_timeout=settings.chain_read_timeout,
        write_timeout=settings.chain_write_timeout,
    )
