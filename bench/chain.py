"""Chain adapter costs: request signing and verification, and local-chain metagraph and weight latency.

Usage: python bench/chain.py [--sizes 16,64,256] [--quick]

Figures: signed requests per second (sign; verify with the in-memory and the SQLite nonce store),
and, per subnet size, the latency of a metagraph snapshot and of one set_weights through the real
SDK over the local chain. Writes bench/results/chain.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from neurons.chain.client import open_chain
from neurons.chain.local.state import create_local_chain, register  # noqa: E402
from neurons.chain.signing import make_nonce_store, sign_request, verify_request
from neurons.chain.wallets import create_wallet, hotkey_of, register_wallet

BODY = json.dumps({"task": "a kettle under 30", "tools": ["find_product"] * 20}).encode()


def bench_signing(root: Path, n: int) -> dict[str, float]:
    sender, receiver = create_wallet(root, "sender"), create_wallet(root, "receiver")
    me = hotkey_of(receiver)
    start = time.perf_counter()
    signed = [sign_request(sender, method="POST", path="/v1/tasks", body=BODY, receiver=me) for _ in range(n)]
    sign_s = time.perf_counter() - start
    out = {"sign_per_s": n / sign_s}
    for label, store in (
        ("memory", make_nonce_store(retention=700)),
        ("sqlite", make_nonce_store(root / "nonces.db", retention=700)),
    ):
        start = time.perf_counter()
        for headers in signed:
            verify_request(
                headers, BODY, method="POST", path="/v1/tasks", self_hotkey=me, nonce_store=store, max_age=600
            )
        out[f"verify_{label}_per_s"] = n / (time.perf_counter() - start)
    return out


async def bench_local_chain(root: Path, size: int, repeats: int) -> dict[str, float]:
    wallets = root / f"wallets-{size}"
    validator = create_wallet(wallets, "validator")
    path = root / f"chain-{size}.db"
    create_local_chain(
        path,
        1,
        owner_hotkey=hotkey_of(validator),
        owner_coldkey=validator.coldkeypub.ss58_address,
        weights_rate_limit=0,
        max_uids=size + 1,
        commit_reveal=False,  # plain set_weights, comparable with the figures measured before
    )
    register_wallet(path, validator, stake=1000.0, validator_permit=True)
    for i in range(1, size):
        register(path, f"miner-hotkey-{i}", f"miner-coldkey-{i}")
    chain = open_chain(
        "local",
        1,
        wallet_name="validator",
        wallet_hotkey="default",
        wallet_path=wallets,
        local_chain_path=path,
    )
    snapshots, submits = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        snapshot = await chain.snapshot()
        snapshots.append(time.perf_counter() - start)
        uids = [n.uid for n in snapshot.neurons]
        start = time.perf_counter()
        submission = await chain.set_weights(uids, [float(u + 1) for u in uids], version_key=0)
        submits.append(time.perf_counter() - start)
        if not submission.success:
            raise RuntimeError(submission.message)
    return {
        "neurons": size,
        "snapshot_ms_median": 1000 * statistics.median(snapshots),
        "set_weights_ms_median": 1000 * statistics.median(submits),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="16,64,256", help="subnet sizes, comma separated")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    requests, repeats = (200, 3) if args.quick else (2000, 10)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        results: dict[str, Any] = {"signing": bench_signing(root, requests), "local_chain": []}
        for size in sizes:
            results["local_chain"].append(asyncio.run(bench_local_chain(root, size, repeats)))
    signing = results["signing"]
    print(f"sign {signing['sign_per_s']:.0f}/s  verify(memory) {signing['verify_memory_per_s']:.0f}/s  "
          f"verify(sqlite) {signing['verify_sqlite_per_s']:.0f}/s")  # fmt: skip
    for row in results["local_chain"]:
        print(f"neurons={row['neurons']:4d}  snapshot {row['snapshot_ms_median']:.1f} ms  "
              f"set_weights {row['set_weights_ms_median']:.1f} ms")  # fmt: skip
    out = Path(__file__).parent / "results" / "chain.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), **results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
