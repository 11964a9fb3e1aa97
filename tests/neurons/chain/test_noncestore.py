"""The SQLite nonce store: one replay window shared by every worker process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from neurons.chain.noncestore import SqliteNonceStore


def test_a_nonce_is_accepted_once(tmp_path: Path) -> None:
    store = SqliteNonceStore(tmp_path / "n.db")

    assert store.check_and_store("hk", 1)
    assert not store.check_and_store("hk", 1)
    assert store.check_and_store("other", 1)
    assert store.check_and_store("hk", 2)


def test_two_stores_on_one_file_share_what_they_saw(tmp_path: Path) -> None:
    first, second = SqliteNonceStore(tmp_path / "n.db"), SqliteNonceStore(tmp_path / "n.db")

    assert first.check_and_store("hk", 7)
    assert not second.check_and_store("hk", 7)


def test_entries_are_forgotten_after_the_retention(tmp_path: Path) -> None:
    now = [1000.0]
    store = SqliteNonceStore(tmp_path / "n.db", retention=30.0, clock=lambda: now[0])
    assert store.check_and_store("hk", 1)

    now[0] += 29.0
    assert not store.check_and_store("hk", 1)
    now[0] += 31.0
    assert store.check_and_store("hk", 1)


def test_concurrent_processes_accept_a_nonce_exactly_once(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from neurons.chain.noncestore import SqliteNonceStore
        store = SqliteNonceStore(Path({str(tmp_path / "n.db")!r}))
        print(sum(store.check_and_store("hk", n) for n in range(200)))
        """
    )
    workers = [
        subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) for _ in range(4)
    ]
    accepted = [int(w.communicate(timeout=120)[0]) for w in workers]

    assert sum(accepted) == 200
