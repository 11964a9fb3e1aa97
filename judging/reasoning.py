"""The LLM reasoning judge: a gated rubric scored by any OpenAI-compatible endpoint, strictly parsed.

The trajectory is sent as escaped JSON inside a delimited block and declared untrusted; the
judge is told to ignore instructions in it and to flag them. Independently, code looks for
injection attempts in the assistant's text and tool arguments; a flagged trajectory gets the
lowest reasoning value, so an injection can never raise a score. The reply must be one JSON
object with boolean gates and a score from {0, 1, 2, 3, 4}; anything else (NaN, 2.5, a
string, a missing key) is refused. The value is ``min(score, gates passed in order) / 4``.
Timeouts, errors, 5xx and replies outside the schema are retried with exponential backoff, then
the check is *unscored* (None, with the cause: an outage), never 0. A 4xx is our own request's
fault (``JudgeRefused``): not retried, logged at ERROR, unscored ``refused``, not an outage.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal

from arena.arguments import loads_finite
from arena.types import Task, Trajectory
from judging.config import JudgeCalls
from judging.context import Completer, JudgingContext
from judging.errors import JudgeRefused, JudgeUnavailable
from judging.injection import injection_signals
from judging.reasoning_prompt import build_messages, prompt_hash
from judging.types import Check, ReasoningEvidence, ReasoningVerdict, Unscored

__all__ = [
    "VERDICT_SCHEMA",
    "Completer",
    "OpenAICompleter",
    "check_reasoning",
    "gated_value",
    "injection_signals",
    "judge_reasoning",
    "parse_verdict",
    "reasoning_check",
    "skipped_reasoning",
]

logger = logging.getLogger(__name__)

SCALE = (0, 1, 2, 3, 4)
GATES = ("inference_present", "tool_results_analysed", "datum_cited", "candidates_compared")
_LABEL = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


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
        """Ask the endpoint once at temperature 0 and return the reply text.

        Raises:
            JudgeRefused: the endpoint answered with a 4xx other than 408 and 429 (our request
                is at fault: a prompt over the model's context, a wrong model name or key).
            TimeoutError: no answer in time, or a 408.
            openai.APIError: transport failures, 429 and 5xx (outages; the caller retries).
        """
        extra: dict[str, Any] = {}
        if self._response_format == "json_object":
            extra["response_format"] = {"type": "json_object"}
        elif self._response_format == "json_schema":
            schema = {"name": "reasoning_verdict", "schema": VERDICT_SCHEMA, "strict": True}
            extra["response_format"] = {"type": "json_schema", "json_schema": schema}
        from openai import APIStatusError, APITimeoutError

        try:
            response = await self._client.chat.completions.create(
                model=self._model,
                messages=[dict(m) for m in messages],  # type: ignore[misc]
                temperature=0.0,
                max_tokens=self._max_tokens,
                **extra,
            )
        except APITimeoutError as exc:
            raise TimeoutError("the judge did not answer in time") from exc
        except APIStatusError as exc:
            status = exc.status_code
            if status == 408:
                raise TimeoutError("the judge timed out the request (408)") from exc
            if 400 <= status < 500 and status != 429:  # 429: overloaded, an outage like a 5xx
                raise JudgeRefused(status, str(exc.message)[:200]) from exc
            raise
        return response.choices[0].message.content or ""

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()


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

    try:
        value = loads_finite(body[start : end + 1])
    except (ValueError, RecursionError) as exc:
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


def reasoning_without_judge(signals: Sequence[str], *, model: str | None = None) -> ReasoningVerdict:
    """The verdict code alone gives: 0 when the miner's text addresses the judge, else unscored.

    Code found the miner's text addressing the judge: the lowest value, judge or not. Otherwise,
    with no judge to ask, the reasoning is unscored (``disabled``), never 0.
    """
    if signals:
        return ReasoningVerdict(value=0.0, model=model, labels=("injection_attempt",), injection_flagged=True)
    return ReasoningVerdict(value=None, unscored=Unscored(cause="disabled"))


async def judge_reasoning(
    task: Task,
    trajectory: Trajectory,
    completer: Completer | None,
    *,
    calls: JudgeCalls | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    signals: Sequence[str] | None = None,
    messages: Sequence[Mapping[str, str]] | None = None,
) -> ReasoningVerdict:
    """Judge a trajectory's reasoning; never raises for judge faults.

    ``signals`` (``injection_signals``) and ``messages`` (``build_messages``) are computed here
    unless given: a caller that computed them off the event loop passes them in.

    Returns:
        A verdict with a value from {0, .25, .5, .75, 1}; 0 with ``injection_flagged`` when
        the miner's text addresses the judge (found by code even without a judge, or by the
        judge); None with ``unscored`` (the cause) when no judge is configured or it stayed
        unavailable after ``calls.retries`` retries (``calls``: the default ``JudgeCalls``).
    """
    calls = JudgeCalls() if calls is None else calls
    signals = injection_signals(trajectory) if signals is None else signals
    if signals or completer is None:
        return reasoning_without_judge(signals, model=completer.model if completer is not None else None)
    if messages is None:
        messages = build_messages(task, trajectory)
    failure = JudgeUnavailable("error", "no attempt made")
    for attempt in range(calls.retries + 1):
        if attempt:
            await sleep(calls.backoff * 2 ** (attempt - 1))
        try:
            reply = await asyncio.wait_for(completer.complete(messages), timeout=calls.timeout)
            score, gates, injection, labels = parse_verdict(reply)
        except JudgeRefused as exc:
            # Our request is at fault; asking again gets the same answer. Not an outage: the
            # episode keeps its place in the weights (reasoning neutral, as with no judge).
            logger.error(
                "judge_refused status=%d model=%s detail=%s", exc.status, completer.model, exc.detail
            )
            detail = f"the judge refused the request ({exc.status}): {exc.detail}"
            return ReasoningVerdict(
                value=None, model=completer.model, unscored=Unscored(cause="refused", detail=detail)
            )
        except JudgeUnavailable as exc:
            failure = exc
        except TimeoutError:
            failure = JudgeUnavailable("timeout", f"no reply within {calls.timeout}s")
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
        value=None, model=completer.model, unscored=Unscored(cause=failure.cause, detail=failure.detail)
    )


def reasoning_check(verdict: ReasoningVerdict) -> Check:
    """Wrap a verdict as the ``reasoning`` Check (its evidence carries the whole verdict but the value)."""
    if verdict.value is None:
        explanation = f"unscored ({verdict.unscored})"
    elif verdict.injection_flagged:
        explanation = "injection attempt flagged: the trajectory addresses the judge"
    else:
        explanation = f"gated rubric {verdict.value:.2f} by {verdict.model}"
    evidence = ReasoningEvidence(
        model=verdict.model,
        labels=verdict.labels,
        prompt_hash=prompt_hash(),
        injection_flagged=verdict.injection_flagged,
        unscored=verdict.unscored,
    )
    return Check(name="reasoning", value=verdict.value, explanation=explanation, evidence=evidence)


async def check_reasoning(ctx: JudgingContext) -> Check:
    """The ``reasoning`` check: the context's completer judges (unscored, never 0, when it fails)."""
    config = ctx.config
    verdict = await judge_reasoning(
        ctx.task,
        ctx.trajectory,
        ctx.completer,
        calls=config.calls,
        signals=ctx.injection_signals,
        messages=ctx.judge_messages if ctx.completer is not None and not ctx.injection_signals else None,
    )
    return reasoning_check(verdict)


def skipped_reasoning(completer: Completer | None, detail: str) -> Check:
    """The ``reasoning`` check when the judge is not asked (``detail`` says why): unscored, ``skipped``."""
    model = completer.model if completer is not None else None
    return reasoning_check(
        ReasoningVerdict(value=None, model=model, unscored=Unscored(cause="skipped", detail=detail))
    )
