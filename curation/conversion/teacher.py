"""The teacher writer: a model behind any OpenAI-compatible endpoint writes each step's rationale.

It speaks judging's :class:`~judging.context.Completer` protocol (``OpenAICompleter`` on vLLM, the
embedded local model, or a stand-in in tests). The model is shown what the agent knows at the
step (the user's request, the shopper's answers so far, the call it is about to make, and a
grounded statement of the facts it may cite, which the deterministic writer composes from the
same fact table) and asked for the reasoning in its own words. Nothing it writes is trusted:
the conversion verifies every rationale with the same code as the template writer's
(:mod:`curation.conversion.verify`) and asks again with the refusals named. After ``tries``
refused answers (or a transport error) the step is written by the deterministic writer
instead, unless ``fallback`` is off: then the conversion drops the trace
(``ungrounded_rationale``).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from curation.conversion.step import Step
from curation.conversion.template import compose
from judging.context import Completer

logger = logging.getLogger(__name__)

TEACHER_PROMPT = """\
You write the private reasoning of a shopping agent just before it makes one tool call.
In two to four sentences: name what the user asked for that motivates this call, cite only facts
listed under FACTS (product ids, titles, prices, shops, attribute values exactly as written there),
and state the call's important arguments. Never invent ids, prices or attribute values.
Reply with the reasoning text only."""
PROMPT_HASH = hashlib.sha256(TEACHER_PROMPT.encode("utf-8")).hexdigest()[:12]
DEFAULT_TRIES = 2


@dataclass
class TeacherWriter:
    """Rationales from a model, verified by the conversion; the deterministic writer covers refusals.

    Attributes:
        completer: the endpoint (temperature 0).
        tries: model answers per step before the fallback (the conversion's ``attempts`` must
            exceed it for the fallback to be reached).
        fallback: write refused steps with the template writer (else the trace is dropped).
        fallbacks: steps written by the fallback so far (state: one writer per run).
    """

    completer: Completer
    tries: int = DEFAULT_TRIES
    fallback: bool = True
    fallbacks: int = field(default=0, init=False)

    @property
    def provenance(self) -> str:
        """``teacher:<model>@<prompt hash>``."""
        return f"teacher:{self.completer.model}@{PROMPT_HASH}"

    def messages(self, step: Step, problems: Sequence[str]) -> list[dict[str, str]]:
        """The chat the model is asked: the system prompt, then the step's request, call and facts."""
        call = json.dumps({"tool": step.tool, "arguments": step.arguments}, ensure_ascii=False)
        parts = [f"USER REQUEST: {step.task.query}"]
        # The shopper's answers so far are the user's words too (ask_user, tool set arena-3).
        parts += [f"SHOPPER ANSWER to {h.question!r}: {h.answer}" for h in step.facts.answers]
        parts += [f"CALL: {call}", f"FACTS: {compose(step)}"]
        if problems:
            parts.append("Your previous answer was refused: " + "; ".join(problems) + ". Fix it.")
        return [{"role": "system", "content": TEACHER_PROMPT}, {"role": "user", "content": "\n".join(parts)}]

    async def write(self, step: Step, *, attempt: int, problems: Sequence[str]) -> str:
        """The model's rationale for the first ``tries`` attempts, then the deterministic writer's."""
        if attempt < self.tries or not self.fallback:
            try:
                text = await self.completer.complete(self.messages(step, problems))
            except Exception as exc:  # noqa: BLE001 - the endpoint's faults are data: fall back
                logger.warning("teacher_error tool=%s error=%s", step.tool, type(exc).__name__)
                if not self.fallback:
                    return ""
            else:
                return text.strip()
        self.fallbacks += 1
        return compose(step, attempt)
