"""The export formats as TRL documents them: one row schema (``datasets.Features``) and one validator each.

- sft: ``messages``, ``tools``; conversational language modeling with tools (``SFTTrainer``);
- kto: ``prompt``, ``completion``, ``label``, ``tools``; conversational unpaired preference
  (``KTOTrainer``);
- dpo: ``prompt``, ``chosen``, ``rejected``, ``tools``; conversational preference with an
  explicit prompt (``DPOTrainer``);
- grpo: ``prompt``, ``tools``, ``task_id``, ``intent``, ``ground_truth``, ``observed_rewards``,
  ``observed_success``, ``observed_turn_rewards``; conversational prompt-only, the extra
  columns reach the reward functions (``GRPOTrainer``).

SFT, KTO and DPO rows also carry the provenance columns (``PROVENANCE_COLUMNS``): ``origin``
(``native``: the miner's own trace; ``converted``: rewritten by ``curation.conversion``) and, for
a converted row, ``source_hash`` (the source trace's content hash), ``converter_version`` and
``writer`` (``template/<n>`` or ``teacher:<model>@<prompt hash>``); trainers may filter on them.
Every row of the four formats carries the world columns (``WORLD_COLUMNS``): ``world_id`` and
``pack_hash`` of the world pack the trace (or the GRPO row's task) ran on, both null for static
``sb-1`` tasks.

Messages follow ``curation.chat`` (six keys, tool-call ``arguments`` a dict). SFT, KTO and DPO
pass a row's ``tools`` to the chat template. In Parquet, ``arguments``, each tool schema and
``ground_truth`` are ``datasets.Json`` columns: stored as JSON text, read back as the same
objects, so arguments with different keys never get each other's keys filled with None (what
Arrow's struct inference does).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from datasets import Features, Json, List, Value

from curation.chat import MESSAGE_KEYS
from curation.errors import RowError

FORMATS: tuple[str, ...] = ("sft", "kto", "dpo", "grpo")
ROLES = ("system", "user", "assistant", "tool")

_MESSAGE = {
    "role": Value("string"),
    "content": Value("string"),
    "reasoning_content": Value("string"),
    "tool_calls": List(
        {
            "id": Value("string"),
            "type": Value("string"),
            "function": {"name": Value("string"), "arguments": Json()},
        }
    ),
    "tool_call_id": Value("string"),
    "name": Value("string"),
}
_CONVERSATION = List(_MESSAGE)
_TOOLS = List(Json())
PROVENANCE_COLUMNS = ("origin", "source_hash", "converter_version", "writer")
ORIGINS = ("native", "converted")
# A rollout row (``curation.rollouts``: a policy's own verified episode in the RL environment) is
# native data made by a model: ``origin: rollout``, and the policy, its weights' hash and the
# samples per task it was drawn from, in three more columns.
ROLLOUT = "rollout"
ROLLOUT_COLUMNS = ("policy", "weights_hash", "k")
_PROVENANCE = {name: Value("string") for name in PROVENANCE_COLUMNS}
WORLD_COLUMNS = ("world_id", "pack_hash")
_WORLD = {name: Value("string") for name in WORLD_COLUMNS}

FEATURES: dict[str, Features] = {
    "sft": Features({"messages": _CONVERSATION, "tools": _TOOLS, **_PROVENANCE, **_WORLD}),
    "kto": Features(
        {
            "prompt": _CONVERSATION,
            "completion": _CONVERSATION,
            "label": Value("bool"),
            "tools": _TOOLS,
            **_PROVENANCE,
            **_WORLD,
        }
    ),
    "dpo": Features(
        {
            "prompt": _CONVERSATION,
            "chosen": _CONVERSATION,
            "rejected": _CONVERSATION,
            "tools": _TOOLS,
            **_PROVENANCE,
            **_WORLD,
        }
    ),
    "grpo": Features(
        {
            "prompt": _CONVERSATION,
            "tools": _TOOLS,
            "task_id": Value("string"),
            "intent": Value("string"),
            "ground_truth": Json(),
            "observed_rewards": List(Value("float64")),
            "observed_success": List(Value("bool")),
            "observed_turn_rewards": List(List(Value("float64"))),
            **_WORLD,
        }
    ),
}


ROLLOUT_FEATURES: dict[str, Features] = {
    fmt: Features(
        {**FEATURES[fmt], "policy": Value("string"), "weights_hash": Value("string"), "k": Value("int64")}
    )
    for fmt in ("sft", "kto")
}


def validate_row(fmt: str, row: dict[str, Any]) -> None:
    """Check one row against its format's documented TRL shape (see the module table).

    Raises:
        RowError: with every problem found, the first few named.
    """
    problems: list[str] = []
    rollout = row.get("origin") == ROLLOUT and fmt in ROLLOUT_FEATURES
    expected = set(ROLLOUT_FEATURES[fmt] if rollout else FEATURES[fmt])
    if set(row) != expected:
        problems.append(f"columns {sorted(row)} are not {sorted(expected)}")
    else:
        names = _tools(row["tools"], problems)
        if fmt == "sft":
            _conversation(row["messages"], "messages", names, problems, prompt_first=True)
        else:
            _prompt(row["prompt"], problems)
        if fmt == "kto":
            _conversation(row["completion"], "completion", names, problems)
            if not isinstance(row["label"], bool):
                problems.append("label must be a bool")
        if fmt == "dpo":
            _conversation(row["chosen"], "chosen", names, problems)
            _conversation(row["rejected"], "rejected", names, problems)
            if row["chosen"] == row["rejected"]:
                problems.append("chosen and rejected are the same")
        if fmt == "grpo":
            _grpo(row, problems)
        else:
            _provenance(row, problems)
        _world(row, problems)
    if problems:
        raise RowError(f"invalid {fmt} row: " + "; ".join(problems[:5]))


def _provenance(row: dict[str, Any], problems: list[str]) -> None:
    """``origin`` is native, converted or rollout; a converted row names its source, converter and writer."""
    if row["origin"] == ROLLOUT:
        if not isinstance(row.get("policy"), str) or not row["policy"]:
            problems.append("a rollout row names its policy")
        if not isinstance(row.get("k"), int) or isinstance(row["k"], bool) or row["k"] < 1:
            problems.append("a rollout row's k is a positive integer")
        if not isinstance(row.get("weights_hash"), str | None):
            problems.append("a rollout row's weights_hash is a string or null")
    elif row["origin"] not in ORIGINS:
        problems.append(f"origin must be one of {', '.join(ORIGINS)}, not {row['origin']!r}")
    elif row["origin"] == "converted":
        missing = [c for c in PROVENANCE_COLUMNS[1:] if not isinstance(row[c], str) or not row[c]]
        if missing:
            problems.append(f"a converted row needs {', '.join(missing)}")


def _world(row: dict[str, Any], problems: list[str]) -> None:
    """``world_id`` and ``pack_hash`` are both strings (a world task) or both null (a static one)."""
    values = [row[c] for c in WORLD_COLUMNS]
    if not (all(v is None for v in values) or all(isinstance(v, str) and v for v in values)):
        problems.append("world_id and pack_hash must be both set or both null")


def _tools(tools: Any, problems: list[str]) -> set[str]:
    names: set[str] = set()
    if not isinstance(tools, list) or not tools:
        problems.append("tools must be a non-empty list of function schemas")
        return names
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if tool.get("type") != "function" or not isinstance(function, dict) or not function.get("name"):
            problems.append(f"tool {str(tool)[:60]} is not a function schema")
            continue
        if not isinstance(function.get("parameters"), dict):
            problems.append(f"tool {function['name']} has no parameters schema")
        names.add(function["name"])
    return names


def _message(item: Any, where: str, problems: list[str]) -> bool:
    if not isinstance(item, dict) or tuple(item) != MESSAGE_KEYS:
        problems.append(f"{where}: a message must have exactly the keys {MESSAGE_KEYS}")
        return False
    role = item["role"]
    checks = {
        "unknown role": role not in ROLES,
        "content must be a string": not isinstance(item["content"], str),
        "a tool message needs tool_call_id and name": role == "tool"
        and not (isinstance(item["tool_call_id"], str) and isinstance(item["name"], str)),
        "only a tool message has tool_call_id or name": role != "tool"
        and (item["tool_call_id"] is not None or item["name"] is not None),
        "only an assistant message has tool_calls or reasoning": role != "assistant"
        and (item["tool_calls"] is not None or item["reasoning_content"] is not None),
        "reasoning_content must be a string or None": not isinstance(item["reasoning_content"], str | None),
    }
    problems.extend(f"{where}: {text}" for text, failed in checks.items() if failed)
    return not any(checks.values())


def _calls(item: dict[str, Any], where: str, names: set[str], problems: list[str]) -> list[str]:
    calls = item["tool_calls"]
    if calls is None:
        return []
    if not isinstance(calls, list) or not calls:
        problems.append(f"{where}: tool_calls must be None or a non-empty list")
        return []
    ids: list[str] = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if (
            not isinstance(function, dict)
            or set(call) != {"id", "type", "function"}
            or call["type"] != "function"
            or set(function) != {"name", "arguments"}
        ):
            problems.append(
                f"{where}: a tool call must be {{id, type: function, function: {{name, arguments}}}}"
            )
            continue
        if not isinstance(function["arguments"], dict):
            problems.append(
                f"{where}: arguments must be a JSON object (dict), not {type(function['arguments']).__name__}"
            )
        if function["name"] not in names:
            problems.append(f"{where}: calls {function['name']!r}, which is not in tools")
        ids.append(str(call["id"]))
    return ids


def _conversation(
    messages: Any, column: str, names: set[str], problems: list[str], *, prompt_first: bool = False
) -> None:
    if not isinstance(messages, list) or not messages:
        problems.append(f"{column} must be a non-empty list of messages")
        return
    start = 0
    if prompt_first:
        start = _prompt(messages, problems, column=column, whole=False)
    elif isinstance(messages[0], dict) and messages[0].get("role") != "assistant":
        problems.append(f"{column} must start with an assistant message")
    pending: set[str] = set()
    for index, item in enumerate(messages[start:], start):
        where = f"{column}[{index}]"
        if not _message(item, where, problems):
            continue
        if item["role"] in ("system", "user"):
            problems.append(f"{where}: no {item['role']} message after the prompt")
        elif item["role"] == "tool":
            if item["tool_call_id"] not in pending:
                problems.append(f"{where}: answers no pending tool call")
            pending.discard(item["tool_call_id"])
        else:
            if pending:
                problems.append(f"{where}: earlier tool calls have no result: {sorted(pending)}")
            pending = set(_calls(item, where, names, problems))
    if pending:
        problems.append(f"{column}: tool calls without a result: {sorted(pending)}")


def _prompt(messages: Any, problems: list[str], *, column: str = "prompt", whole: bool = True) -> int:
    """Check a system? + user prompt; return how many messages it takes."""
    if not isinstance(messages, list) or not messages:
        problems.append(f"{column} must be a non-empty list of messages")
        return 0
    roles = [m.get("role") if isinstance(m, dict) else None for m in messages]
    length = 2 if roles[0] == "system" else 1
    if roles[length - 1 : length] != ["user"] or (whole and len(messages) != length):
        problems.append(f"{column} must open with an optional system message and one user message")
    for index, item in enumerate(messages[:length]):
        _message(item, f"{column}[{index}]", problems)
    return length


def _grpo(row: dict[str, Any], problems: list[str]) -> None:
    truth = row["ground_truth"]
    if not isinstance(truth, dict) or not isinstance(truth.get("gold"), list) or not truth["gold"]:
        problems.append("ground_truth must be the task's definition with its gold items")
    lengths = {len(row[k]) for k in ("observed_rewards", "observed_success", "observed_turn_rewards")}
    if len(lengths) != 1:
        problems.append("observed_* columns must have one entry per observed episode")
    rewards: Sequence[Any] = row["observed_rewards"]
    if any(not isinstance(r, float | int) or not 0 <= r <= 1 for r in rewards):
        problems.append("observed_rewards must be scores in [0, 1]")
    if not isinstance(row["task_id"], str) or not row["task_id"]:
        problems.append("task_id must be a non-empty string")
