"""Map domain values (arena.types, judging.types, storage.records) to ORM rows and back.

Reading back re-validates: a task's id and a judgment's content hash are recomputed by their
models, so a stored value that no longer matches its address fails loudly instead of being
served silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from arena.inference import InferenceExchange
from arena.types import Task, ToolLogEntry, Trajectory, content_hash, result_hash
from judging.types import Judgment
from storage.errors import StorageError
from storage.models import EpisodeRow, InferenceRow, JudgmentRow, TaskRow, ToolLogRow
from storage.records import EpisodeRecord

M = TypeVar("M", bound=BaseModel)

# Task fields kept in columns as well as in the task JSON; the columns are authoritative.
TASK_COLUMNS = (
    "intent",
    "pool",
    "leak_cluster",
    "catalog_version",
    "generator_version",
    "difficulty",
    "source",
)


def task_to_row(task: Task, *, now: datetime) -> TaskRow:
    """Build the row of a new task."""
    row = TaskRow(task_id=task.task_id, task=task.model_dump(mode="json"), created_at=now)
    for name in TASK_COLUMNS:
        setattr(row, name, getattr(task, name))
    return row


def row_to_task(row: TaskRow) -> Task:
    """Rebuild a task; pool and bookkeeping come from the columns (they change, the JSON may lag)."""
    data = {**row.task, **{name: getattr(row, name) for name in TASK_COLUMNS}}
    return _validate(Task, data, f"task {row.task_id}")


def episode_content_hash(
    episode: EpisodeRecord,
    wire: dict[str, Any] | None,
    tool_log: Sequence[ToolLogEntry],
    inference_log: Sequence[InferenceExchange] = (),
) -> str:
    """Address an episode, its trajectory (wire form), tool log and gateway exchanges together.

    A retry hashes the same. What an episode did not have is left out of the hashed value, so
    hashes stored before it existed stay valid: a static episode's world, an episode's
    exchanges where it made none.
    """
    static = {"world_id", "pack_hash"} if episode.world_id is None else None
    value: dict[str, Any] = {
        "episode": episode.model_dump(mode="json", exclude=static),
        "trajectory": wire,
        "tool_log": [entry.model_dump(mode="json") for entry in tool_log],
    }
    if inference_log:
        value["inference_log"] = [exchange.model_dump(mode="json") for exchange in inference_log]
    return content_hash(value, prefix="e-")


def episode_to_row(
    episode: EpisodeRecord,
    wire: dict[str, Any] | None,
    *,
    content_hash: str,
    now: datetime,
    work: str | None = None,
) -> EpisodeRow:
    """Build the row of an episode; ``wire`` is its trajectory's ``to_wire()`` (None when unanswered)."""
    return EpisodeRow(
        episode_id=episode.episode_id,
        round_id=episode.round_id,
        task_id=episode.task_id,
        miner_hotkey=episode.miner_hotkey,
        miner_uid=episode.miner_uid,
        validator_hotkey=episode.validator_hotkey,
        started_at=episode.started_at,
        finished_at=episode.finished_at,
        end_reason=episode.end,
        world_id=episode.world_id,
        pack_hash=episode.pack_hash,
        trajectory=wire,
        content_hash=content_hash,
        stored_at=now,
        work_hash=work,
    )


def row_to_episode(row: EpisodeRow) -> EpisodeRecord:
    """Rebuild an episode record."""
    data = {
        "episode_id": row.episode_id,
        "round_id": row.round_id,
        "task_id": row.task_id,
        "miner_hotkey": row.miner_hotkey,
        "miner_uid": row.miner_uid,
        "validator_hotkey": row.validator_hotkey,
        "started_at": row.started_at,
        "finished_at": row.finished_at,
        "end": row.end_reason,
        "world_id": row.world_id,
        "pack_hash": row.pack_hash,
    }
    return _validate(EpisodeRecord, data, f"episode {row.episode_id}")


def row_to_trajectory(row: EpisodeRow) -> Trajectory | None:
    """Rebuild the episode's trajectory (None for an unanswered episode)."""
    if row.trajectory is None:
        return None
    return _validate(Trajectory, row.trajectory, f"trajectory of episode {row.episode_id}")


def storable_log(tool_log: Sequence[ToolLogEntry]) -> list[ToolLogEntry]:
    """The tool log with every text that cannot be encoded (a lone surrogate) written as its escape.

    For an episode stored as a miner fault after ``UnstorableContent``: the server's record of
    its calls is kept, readable, each changed result with its hash recomputed. Entries that
    encode already are returned as they are.
    """
    kept: list[ToolLogEntry] = []
    for entry in tool_log:
        arguments, result = _escaped(entry.arguments), _escaped(entry.result)
        call_id, tool = _escaped(entry.call_id), _escaped(entry.tool)
        if (arguments, result, call_id, tool) == (entry.arguments, entry.result, entry.call_id, entry.tool):
            kept.append(entry)
            continue
        changes = {"arguments": arguments, "result": result, "call_id": call_id, "tool": tool}
        kept.append(entry.model_copy(update={**changes, "result_hash": result_hash(result)}))
    return kept


def _escaped(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_escaped(key): _escaped(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_escaped(item) for item in value]
    return value


def log_to_row(entry: ToolLogEntry) -> ToolLogRow:
    """Build the row of one tool log entry."""
    return ToolLogRow(
        episode_id=entry.episode_id,
        seq=entry.seq,
        call_id=entry.call_id,
        tool=entry.tool,
        arguments=entry.arguments,
        result=entry.result,
        result_hash=entry.result_hash,
        status=entry.status,
        started_at=entry.started_at,
        finished_at=entry.finished_at,
        nonce_status=entry.nonce_status,
        world_version=entry.world_version,
    )


def row_to_log(row: ToolLogRow) -> ToolLogEntry:
    """Rebuild one tool log entry."""
    data = {
        "episode_id": row.episode_id,
        "seq": row.seq,
        "call_id": row.call_id,
        "tool": row.tool,
        "arguments": row.arguments,
        "result": row.result,
        "result_hash": row.result_hash,
        "status": row.status,
        "started_at": row.started_at,
        "finished_at": row.finished_at,
        "nonce_status": row.nonce_status,
        "world_version": row.world_version,
    }
    return _validate(ToolLogEntry, data, f"tool log entry {row.episode_id}#{row.seq}")


# InferenceExchange fields, each stored in the column of the same name.
EXCHANGE_COLUMNS = tuple(InferenceExchange.model_fields)


def exchange_to_row(exchange: InferenceExchange) -> InferenceRow:
    """Build the row of one exchange through the inference gateway."""
    return InferenceRow(**{name: getattr(exchange, name) for name in EXCHANGE_COLUMNS})


def row_to_exchange(row: InferenceRow) -> InferenceExchange:
    """Rebuild one exchange through the inference gateway."""
    data = {name: getattr(row, name) for name in EXCHANGE_COLUMNS}
    return _validate(InferenceExchange, data, f"inference exchange {row.episode_id}#{row.seq}")


# Judgment fields stored as JSON columns of the same name.
JUDGMENT_JSON = (
    "rejects",
    "checks",
    "outcome",
    "process",
    "reasoning",
    "versions",
    "hallucinated_product_ids",
    "fabricated_call_ids",
)


def judgment_to_row(
    judgment: Judgment, *, now: datetime, world_id: str | None = None, pack_hash: str | None = None
) -> JudgmentRow:
    """Build the row of a judgment; ``world_id`` and ``pack_hash`` are its episode's (None: static)."""
    dumped = judgment.model_dump(mode="json")
    row = JudgmentRow(
        content_hash=judgment.content_hash,
        episode_id=judgment.episode_id,
        task_id=judgment.task_id,
        miner_hotkey=judgment.miner_hotkey,
        success=judgment.success,
        score=judgment.score,
        axis=judgment.axis,
        end_reason=judgment.end,
        reasoning_value=judgment.reasoning.value,
        reasoning_unscored=judgment.reasoning.unscored.cause if judgment.reasoning.unscored else None,
        scorer=judgment.versions.scorer,
        world_id=world_id,
        pack_hash=pack_hash,
        judged_at=now,
    )
    for name in JUDGMENT_JSON:
        setattr(row, name, dumped[name])
    return row


def row_to_judgment(row: JudgmentRow) -> Judgment:
    """Rebuild a judgment; its content hash is verified against the stored one."""
    data: dict[str, Any] = {
        "task_id": row.task_id,
        "episode_id": row.episode_id,
        "miner_hotkey": row.miner_hotkey,
        "success": row.success,
        "score": row.score,
        "axis": row.axis,
        "end": row.end_reason,
        "content_hash": row.content_hash,
    }
    data.update({name: getattr(row, name) for name in JUDGMENT_JSON})
    return _validate(Judgment, data, f"judgment {row.content_hash}")


def _validate(model: type[M], data: Any, what: str) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise StorageError(f"stored {what} does not validate: {exc}") from exc
