"""A throwaway PostgreSQL server for tests and benchmarks: initdb into a temp dir, pg_ctl on loopback.

Use it from any test through the pytest fixtures, which ``tests/conftest.py`` imports for
every test (request ``postgres_url`` or ``postgres_server``; mark the test ``postgres``).

``postgres_server`` (session scope) starts one server for the whole run and stops it at the
end; ``postgres_url`` (function scope) creates a fresh, empty database on it per test and
yields its SQLAlchemy URL (``postgresql+psycopg://arena@127.0.0.1:PORT/test_N``).
Outside pytest, ``running_postgres()`` is a context manager yielding a ``PostgresServer``.

When the process runs as root (initdb and postgres refuse to), the server runs as an
unprivileged user (``postgres`` if it exists, else ``nobody``) that owns the temp dir.
Where neither ``initdb`` nor ``pg_ctl`` can be found, the fixtures skip with a clear message,
except under CI (``CI`` set), where a missing PostgreSQL is a failure.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

SUPERUSER = "arena"
# Test servers trade crash safety for speed: the tests kill clients, never the server.
FAST_SETTINGS = ("fsync=off", "full_page_writes=off", "synchronous_commit=off")


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL binaries on this machine."""


def find_binaries() -> tuple[Path, Path]:
    """Return the paths of ``initdb`` and ``pg_ctl`` (PATH first, then Debian's versioned dirs).

    Raises:
        PostgresUnavailable: where neither can be found.
    """
    candidates = [shutil.which("initdb"), shutil.which("pg_ctl")]
    if all(candidates):
        return Path(str(candidates[0])), Path(str(candidates[1]))
    for bindir in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        initdb, pg_ctl = Path(bindir) / "initdb", Path(bindir) / "pg_ctl"
        if initdb.is_file() and pg_ctl.is_file():
            return initdb, pg_ctl
    raise PostgresUnavailable("PostgreSQL's initdb/pg_ctl are not on PATH nor in /usr/lib/postgresql/*/bin")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _server_user() -> pwd.struct_passwd | None:
    """Return the unprivileged account to run the server as when we are root, else None."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise PostgresUnavailable("running as root and no unprivileged user (postgres, nobody) to run the server")


@dataclass
class PostgresServer:
    """A running throwaway server; ``url(db)`` gives a SQLAlchemy URL for one of its databases."""

    base: Path
    port: int
    pg_ctl: Path
    user: pwd.struct_passwd | None
    _counter: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def data_dir(self) -> Path:
        return self.base / "data"

    @property
    def socket_dir(self) -> Path:
        return self.base / "sock"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str | None = None) -> str:
        """Create an empty database (a fresh name unless given) and return its URL."""
        import psycopg

        name = name or f"test_{next(self._counter)}"
        with psycopg.connect(
            host="127.0.0.1", port=self.port, user=SUPERUSER, dbname="postgres", autocommit=True
        ) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        _run(
            self.user,
            [str(self.pg_ctl), "-D", str(self.data_dir), "-m", "immediate", "-w", "stop"],
            check=False,
        )


def _run(
    user: pwd.struct_passwd | None, argv: list[str], *, check: bool = True
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
    if user is None:
        return subprocess.run(argv, env=env, check=check, capture_output=True, text=True, timeout=120)
    env["HOME"] = str(Path(tempfile.gettempdir()))
    env["USER"] = env["LOGNAME"] = user.pw_name
    return subprocess.run(
        argv,
        env=env,
        check=check,
        capture_output=True,
        text=True,
        timeout=120,
        user=user.pw_uid,
        group=user.pw_gid,
        extra_groups=[],
        cwd=tempfile.gettempdir(),
    )


def _start(base: Path, pg_ctl: Path, user: pwd.struct_passwd | None, durable: bool) -> PostgresServer:
    settings = () if durable else FAST_SETTINGS
    last_error = ""
    for _attempt in range(5):  # a free port can be taken between probing and binding
        server = PostgresServer(base=base, port=_free_port(), pg_ctl=pg_ctl, user=user)
        options = [f"-p {server.port}", "-c listen_addresses=127.0.0.1", f"-k {server.socket_dir}"]
        options += [f"-c {s}" for s in settings]
        argv = [str(pg_ctl), "-D", str(server.data_dir), "-l", str(base / "server.log"), "-w", "-t", "60"]
        result = _run(user, [*argv, "-o", " ".join(options), "start"], check=False)
        if result.returncode == 0:
            return server
        log = base / "server.log"
        last_error = result.stderr + (log.read_text(errors="replace")[-2000:] if log.exists() else "")
    raise RuntimeError(f"PostgreSQL did not start: {last_error}")


@contextlib.contextmanager
def running_postgres(*, durable: bool = False) -> Iterator[PostgresServer]:
    """Start a throwaway PostgreSQL server in a temp dir; stop it and delete the dir on exit.

    Args:
        durable: keep PostgreSQL's crash-safe defaults (fsync on); tests leave it off for speed,
            benchmarks turn it on so their numbers mean something.

    Raises:
        PostgresUnavailable: where the binaries are missing.
    """
    initdb, pg_ctl = find_binaries()
    user = _server_user()
    # Not under pytest's tmp dir, which is private to the current user (0700); as root, in /tmp,
    # which the server's unprivileged user can always traverse (TMPDIR might not be).
    base = Path(tempfile.mkdtemp(prefix="arena-pg-", dir="/tmp" if user is not None else None))
    try:
        (base / "sock").mkdir()
        if user is not None:
            for path in (base, base / "sock"):
                os.chown(path, user.pw_uid, user.pw_gid)
        _run(
            user,
            [str(initdb), "-D", str(base / "data"), "-U", SUPERUSER, "-A", "trust", "-E", "UTF8"]
            + ["--no-locale", "--no-sync"],
        )
        server = _start(base, pg_ctl, user, durable)
        try:
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One throwaway PostgreSQL server for the whole test session (skips only outside CI)."""
    try:
        find_binaries()
    except PostgresUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL is required in CI: {exc}")
        pytest.skip(f"PostgreSQL tests skipped: {exc}")
    with running_postgres() as server:
        yield server


@pytest.fixture()
def postgres_url(postgres_server: PostgresServer) -> str:
    """A fresh, empty database on the session's PostgreSQL server, as a SQLAlchemy URL."""
    return postgres_server.create_database()
