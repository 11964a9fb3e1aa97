"""Start-up pieces of the validator: its secret, database, search index and zeroed metrics."""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
from importlib.metadata import version as package_version

from sqlalchemy import Engine

from arena.errors import ArenaError
from arena.index import SearchIndex, build_index, open_index
from arena.inference import EXCHANGE_OUTCOMES
from arena.types import EPISODE_ENDS, POOLS
from judging.types import AXES, OUTAGE_CAUSES
from neurons import metrics
from neurons.errors import NeuronError
from neurons.protocol import PROTOCOL_VERSION
from neurons.serving import CUT_OFF_REASONS
from neurons.validator.endpoints import ENDPOINT_CAUSES
from neurons.validator.miner_client import OUR_FAULT_REASONS
from neurons.validator.selfcheck import SELF_CHECK_CAUSES
from neurons.validator.settings import ValidatorSettings
from storage.db import check_schema, make_engine, upgrade
from storage.errors import StorageError

logger = logging.getLogger(__name__)

SECRET_FILE = "validator.secret"
JOB_NAMES = ("metagraph", "rotate_tasks", "self_check", "round", "weights", "export")


class StartupError(NeuronError):
    """The validator cannot start with these settings (missing index, secret, schema...): exit 2."""


def load_secret(settings: ValidatorSettings) -> bytes:
    """The validator secret: ``token_secret``, else ``<data_dir>/validator.secret`` (made once, mode 0600)."""
    if settings.token_secret is not None:
        return settings.token_secret.get_secret_value().encode()
    path = settings.data_path() / SECRET_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32) + "\n")
        logger.info("secret_created path=%s", path)
    text = path.read_text().strip()
    if len(text) < 32:
        raise StartupError(f"{path} holds a secret shorter than 32 characters")
    return text.encode()


def derive(secret: bytes, purpose: str) -> bytes:
    """A key for one purpose (``tokens``, ``rounds``...) derived from the validator secret."""
    return hmac.new(secret, f"shopping-arena/{purpose}/1".encode(), hashlib.sha256).digest()


def open_database(settings: ValidatorSettings) -> Engine:
    """The engine; migrated when ``db_upgrade`` or for the embedded SQLite file, else checked at head.

    Raises:
        StartupError: the schema is not at head and upgrading was not asked for.
    """
    if settings.embedded_database():
        settings.data_path().mkdir(parents=True, exist_ok=True, mode=0o700)
    engine = make_engine(settings.database_url())
    if settings.db_upgrade or settings.embedded_database():
        upgrade(engine)
        return engine
    try:
        check_schema(engine)
    except StorageError as exc:
        engine.dispose()
        raise StartupError(f"{exc}; run with --upgrade-db (ARENA_DB_UPGRADE=true) to migrate") from exc
    return engine


def open_search_index(settings: ValidatorSettings) -> SearchIndex:
    """The search index; built from ``catalog`` first when the index directory holds none yet."""
    path = settings.index_path()
    if settings.catalog is not None and not (path / "manifest.json").is_file():
        logger.info("index_build catalog=%s index=%s", settings.catalog, path)
        build_index([settings.catalog.expanduser()], path)
    try:
        return open_index(path)
    except ArenaError as exc:
        raise StartupError(f"{exc} (build it with `arena catalog build`, or set ARENA_CATALOG)") from exc


def init_metrics() -> None:
    """Create the validator's labelled series at zero, so rates and alerts work before the first event."""
    metrics.BUILD_INFO.labels(package_version("shopping-arena"), "validator", str(PROTOCOL_VERSION)).set(1)
    for name in JOB_NAMES:
        metrics.JOB_FAILURES.labels(name)
    for end in (*EPISODE_ENDS, "not_sent"):
        metrics.EPISODES.labels(end)
    for cause in OUTAGE_CAUSES:
        metrics.JUDGE_UNSCORED.labels(cause)
    for verdict in ("success", "failure", "rejected", "unanswered"):
        for axis in AXES:
            metrics.JUDGMENTS.labels(verdict, axis)
    for op in ("save_judged",):
        metrics.DB_ERRORS.labels(op)
    metrics.WEIGHT_SUBMISSIONS.labels("success")
    for reveal in ("revealed", "missing"):
        metrics.WEIGHT_REVEALS.labels(reveal)
    for refusal in ENDPOINT_CAUSES:
        metrics.MINER_ENDPOINT_REFUSALS.labels(refusal)
    for result in ("ok", "partial", "stopped", "refused"):
        metrics.ROUNDS.labels(result)
    for check_cause in SELF_CHECK_CAUSES:
        metrics.SELF_CHECK_FAILURES.labels(check_cause)
    for reason in sorted(OUR_FAULT_REASONS):
        metrics.VALIDATOR_REFUSALS.labels(reason)
    for pool in POOLS:
        metrics.TASK_POOL_SIZE.labels(pool)
    for outcome in EXCHANGE_OUTCOMES:
        metrics.GATEWAY_EXCHANGES.labels(outcome)
    for reason in CUT_OFF_REASONS:
        metrics.HTTP_REFUSED_CONNECTIONS.labels(reason)
