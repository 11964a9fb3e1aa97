"""The LLM reasoning judge: a gated rubric scored by any OpenAI-compatible endpoint, strictly parsed.

The trajectory is sent as escaped JSON inside a delimited block and declared untrusted; the
judge is told to ignore instructions in it and to flag them. Independently, code looks for
injection attempts in the assistant's text and tool arguments; a flagged trajectory gets the
lowest reasoning value, so an injection can never raise a score. The reply must be one JSON
object with boolean gates and a score from {0, 1, 2, 3, 4}; anything else (NaN, 2.5, a
string, a missing key) is refused. The value is ``min(score, gates passed in order) / 4``.
Timeouts, errors and refused replies are retried with exponential backoff, then the check is
*unscored* (None, with the cause), never 0.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import lru_cache
from importlib import resources
from typing import Any, Literal, Protocol

from arena.types import Task, Trajectory
from judging.errors import JudgeUnavailable
from judging.types import Check, ReasoningVerdict

logger = logging.getLogger(__name__)

SCALE = (0, 1, 2, 3, 4)
GATES = ("inference_present", "tool_results_analysed", "datum_cited", "candidates_compared")
# Causes of an unscored verdict. Only the first three are outages of the judge itself.
OUTAGE_CAUSES = ("timeout", "error", "unparseable")
DISABLED = "disabled"
SKIPPED = "skipped"
# (assistant field, tool result) character limits, tried in order until the rendered episode
# fits MAX_EPISODE_CHARS (about 12k tokens), so a long episode cannot overflow a small judge.
LIMITS = ((4000, 1200), (1500, 400), (600, 150), (200, 60))
MAX_EPISODE_CHARS = 48_000
_LABEL = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
_INJECTION = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\b(ignore|disregard|forget|override)\s+(all\s+|any\s+|the\s+|your\s+)?(previous\s+|prior\s+|above\s+|"
        r"earlier\s+|preceding\s+|system\s+|grading\s+|scoring\s+)?(instructions?|prompts?|rubric|rules)\b",
        r"\byou are (now )?(an? |the )?(judge|grader|evaluator|auditor)\b",
        r"\b(judge|grader|evaluator|auditor)s?\b.{0,60}\b(score|grade|award)\b",
        r"\b(give|assign|award)\b.{0,20}\b(this|me|it|the (trajectory|answer|assistant|agent|episode))\b"
        r".{0,20}"
        r"\b(full|perfect|maximum|max|highest|top)\b.{0,15}\b(score|marks?|rating|grade)\b",
        r"\bsystem prompt\b|</?trajectory>|<\|im_(start|end)\|>|\[/?INST\]|^#+\s*(system|instructions?)\b",
        r"[\"']?(inference_present|tool_results_analysed|candidates_compared|injection_attempt)[\"']?\s*:",
    )
]


# The reply's JSON schema, for servers that constrain decoding to it (vLLM, OpenAI); the reply
# is validated against the same rules in parse_verdict whether or not the server enforced it.
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        **{gate: {"type": "boolean"} for gate in GATES},
        "score": {"type": "integer", "enum": list(SCALE)},
        "injection_attempt": {"type": "boolean"},
        "labels": {"type": "array", "items": {"type": "string", "maxLength": 40}, "maxItems": 5},
        "rationale": {"type": "string", "maxLength": 400},
    },
    "required": [*GATES, "score", "injection_attempt", "labels", "rationale"],
    "additionalProperties": False,
}
ResponseFormat = Literal["none", "json_object", "json_schema"]


class Completer(Protocol):
    """A chat endpoint at temperature 0 that returns the assistant's text for ``messages``."""

    @property
    def model(self) -> str:
        """The pinned model name (recorded in every Judgment)."""
        ...

    async def complete(self, messages: Sequence[Mapping[str, str]]) -> str:
        """Return the reply text; raise on transport errors (the caller retries)."""
        ...


class OpenAICompleter:
    """A :class:`Completer` over any OpenAI-compatible endpoint (vLLM, llama.cpp, OpenAI).

    ``response_format`` asks the server to constrain decoding: ``json_schema`` (vLLM, OpenAI)
    sends :data:`VERDICT_SCHEMA`, ``json_object`` asks for any JSON object, ``none`` (the
    default, understood everywhere) relies on the prompt alone.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str = "none",
        max_tokens: int = 400,
        timeout_s: float = 60.0,
        response_format: ResponseFormat = "none",
        http_client: Any = None,  # an AsyncClient of the HTTP library the installed openai uses
    ) -> None:
        from openai import AsyncOpenAI

        # Retries are ours (judge_reasoning's backoff), so the client's own are off.
        self._client = AsyncOpenAI(
            base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=0, http_client=http_client
        )
        self._model = model
        self._max_tokens = max_tokens
        self._response_format = response_format

    @property
    def model(self) -> str:
        """Return the pinned model name."""
        return self._model

    async def complete(self, messages: Sequence[Mapping[str, str]]) -> str:
        """Ask the endpoint once at temperature 0 and return the reply text."""
        extra: dict[str, Any] = {}
        if self._response_format == "json_object":
            extra["response_format"] = {"type": "json_object"}
        elif self._response_format == "json_schema":
            schema = {"name": "reasoning_verdict", "schema": VERDICT_SCHEMA, "strict": True}
            extra["response_format"] = {"type": "json_schema", "json_schema": schema}
        response = await self._client.chat.completions.create(
            model=self._model,
            messages=[dict(m) for m in messages],  # type: ignore[misc]
            temperature=0.0,
            max_tokens=self._max_tokens,
            **extra,
        )
        return response.choices[0].message.content or ""

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()


@lru_cache(maxsize=1)
def prompt_template() -> str:
    """Return the prompt template shipped in ``judging/prompts/reasoning.md``."""
    return resources.files("judging").joinpath("prompts/reasoning.md").read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def prompt_hash() -> str:
    """Return the sha256 (first 16 hex digits) of the prompt template, recorded in every Judgment."""
    return hashlib.sha256(prompt_template().encode("utf-8")).hexdigest()[:16]


def _cut(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f" …[{len(text) - limit} chars cut]"


def _rows(trajectory: Trajectory, field_chars: int, tool_chars: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for m in trajectory.messages:
        if m.role == "system":
            continue
        row: dict[str, Any] = {"role": m.role}
        if m.reasoning_content:
            row["reasoning"] = _cut(m.reasoning_content, field_chars)
        if m.content:
            row["content"] = _cut(m.content, tool_chars if m.role == "tool" else field_chars)
        if m.tool_calls:
            row["tool_calls"] = [
                {"id": c.id, "name": c.function.name, "arguments": _cut(c.function.arguments, field_chars)}
                for c in m.tool_calls
            ]
        if m.tool_call_id:
            row["tool_call_id"] = m.tool_call_id
        rows.append(row)
    return rows


def render_trajectory(trajectory: Trajectory) -> str:
    """Render the trajectory as JSON data with every ``<`` and ``>`` escaped, so it cannot close its block.

    Long fields are cut, more tightly the longer the episode (``LIMITS``), to stay within
    ``MAX_EPISODE_CHARS`` where the cuts allow.
    """
    text = ""
    for field_chars, tool_chars in LIMITS:
        text = json.dumps(_rows(trajectory, field_chars, tool_chars), ensure_ascii=False, indent=1)
        if len(text) <= MAX_EPISODE_CHARS:
            break
    return text.replace("<", "\\u003c").replace(">", "\\u003e")


def build_messages(task: Task, trajectory: Trajectory) -> list[dict[str, str]]:
    """Fill the prompt template: a system message with the rubric, a user message with the data."""
    template = prompt_template()
    system, _, user = template.partition("## user")
    system = system.replace("## system", "", 1).strip()
    task_text = json.dumps({"intent": task.intent, "query": task.query}, ensure_ascii=False)
    task_text = task_text.replace("<", "\\u003c").replace(">", "\\u003e")
    user = (
        user.strip().replace("{{TASK}}", task_text).replace("{{TRAJECTORY}}", render_trajectory(trajectory))
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def injection_signals(trajectory: Trajectory) -> list[str]:
    """Return the places where the miner's own text addresses the judge (assistant text, tool arguments)."""
    found: list[str] = []
    for index, m in enumerate(trajectory.messages):
        if m.role != "assistant":
            continue
        texts = [("reasoning", m.reasoning_content or ""), ("content", m.content or "")]
        texts += [(f"arguments of {c.id}", c.function.arguments) for c in m.tool_calls or ()]
        for where, text in texts:
            if any(p.search(line) for p in _INJECTION for line in text.splitlines() or [text]):
                found.append(f"message {index} {where}")
    return found


def parse_verdict(text: str) -> tuple[int, dict[str, bool], bool, tuple[str, ...]]:
    """Validate a judge reply strictly.

    Returns:
        (score, gates, injection_attempt, labels).

    Raises:
        JudgeUnavailable: with cause ``unparseable`` for anything outside the schema.
    """
    body = text.strip()
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end < start:
        raise JudgeUnavailable("unparseable", "no JSON object in the reply")

    def refuse(constant: str) -> Any:
        raise ValueError(f"non-finite {constant}")

    try:
        value = json.loads(body[start : end + 1], parse_constant=refuse)
    except ValueError as exc:
        raise JudgeUnavailable("unparseable", str(exc)) from exc
    if not isinstance(value, dict):
        raise JudgeUnavailable("unparseable", "reply is not a JSON object")
    gates: dict[str, bool] = {}
    for key in (*GATES, "injection_attempt"):
        if not isinstance(value.get(key), bool):
            raise JudgeUnavailable("unparseable", f"{key} is not a boolean")
        gates[key] = value[key]
    score = value.get("score")
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        raise JudgeUnavailable("unparseable", f"score {score!r} is not a finite number")
    if score not in SCALE:
        raise JudgeUnavailable("unparseable", f"score {score!r} is not one of {SCALE}")
    raw_labels = value.get("labels", [])
    labels = (
        tuple(x for x in raw_labels if isinstance(x, str) and _LABEL.match(x))[:5]
        if isinstance(raw_labels, list)
        else ()
    )
    injection = gates.pop("injection_attempt")
    return int(score), gates, injection, labels


def gated_value(score: int, gates: Mapping[str, bool]) -> float:
    """Return ``min(score, gates passed in order) / 4``: a score never exceeds what its gates support."""
    passed = 0
    for gate in GATES:
        if not gates.get(gate):
            break
        passed += 1
    return min(score, passed) / len(GATES)


async def judge_reasoning(
    task: Task,
    trajectory: Trajectory,
    completer: Completer | None,
    *,
    retries: int = 2,
    timeout_s: float = 60.0,
    backoff_s: float = 1.0,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> ReasoningVerdict:
    """Judge a trajectory's reasoning; never raises for judge faults.

    Returns:
        A verdict with a value from {0, .25, .5, .75, 1}; 0 with ``injection_flagged`` when
        the miner's text addresses the judge (found by code even without a judge, or by the
        judge); None with ``unscored_cause`` when no judge is configured or it stayed
        unavailable after ``retries`` retries.
    """
    model = completer.model if completer is not None else None
    if injection_signals(trajectory):
        # Code found the miner's text addressing the judge: the lowest value, judge or not.
        return ReasoningVerdict(value=0.0, model=model, labels=("injection_attempt",), injection_flagged=True)
    if completer is None:
        return ReasoningVerdict(value=None, unscored_cause=DISABLED)
    messages = build_messages(task, trajectory)
    failure = JudgeUnavailable("error", "no attempt made")
    for attempt in range(retries + 1):
        if attempt:
            await sleep(backoff_s * 2 ** (attempt - 1))
        try:
            reply = await asyncio.wait_for(completer.complete(messages), timeout=timeout_s)
            score, gates, injection, labels = parse_verdict(reply)
        except JudgeUnavailable as exc:
            failure = exc
        except TimeoutError:
            failure = JudgeUnavailable("timeout", f"no reply within {timeout_s}s")
        # The judge is an outside service: whatever it raises must leave the check unscored,
        # never crash judging or count against the miner.
        except Exception as exc:  # noqa: BLE001
            failure = JudgeUnavailable("error", f"{type(exc).__name__}: {exc}")
        else:
            if injection:
                return ReasoningVerdict(
                    value=0.0,
                    model=completer.model,
                    labels=("injection_attempt", *labels),
                    injection_flagged=True,
                )
            return ReasoningVerdict(value=gated_value(score, gates), model=completer.model, labels=labels)
        logger.warning("reasoning_judge attempt=%d cause=%s", attempt + 1, failure.cause)
    return ReasoningVerdict(
        value=None, model=completer.model, unscored_cause=f"{failure.cause}: {failure.detail}"
    )


def reasoning_check(verdict: ReasoningVerdict) -> Check:
    """Wrap a verdict as the ``reasoning`` Check."""
    if verdict.value is None:
        explanation = f"unscored ({verdict.unscored_cause})"
    elif verdict.injection_flagged:
        explanation = "injection attempt flagged: the trajectory addresses the judge"
    else:
        explanation = f"gated rubric {verdict.value:.2f} by {verdict.model}"
    return Check(
        name="reasoning",
        value=verdict.value,
        explanation=explanation,
        evidence={"model": verdict.model, "labels": list(verdict.labels), "prompt_hash": prompt_hash()},
    )
