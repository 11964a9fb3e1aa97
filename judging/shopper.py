"""The shopper check: questions asked of the simulated shopper against those the task needed (arena-3).

It runs only for a task with a hidden shopper profile (``JudgingContext.profile``). The count
comes from the tool server's log, never from the miner's own account: every logged call of an
ask tool (``ask_user``) is a question asked, refused ones (a loop, a flood) included. A task
needs one question per held-back constraint. The check's value is the questions coefficient

    questions = max(0, 1 - question_penalty * extra)        extra = max(0, asked - needed)

which the judge applies to the success share of the outcome only (``judging.judge``), so a
correct order earns up to 1.0, less for each question beyond those needed, and never less than
the same trajectory would earn as a miss. Asking nothing is never penalised here: a task whose
held-back constraints decide the answer is failed by the outcome check instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from arena.tools import tool_kind
from arena.types import ToolLogEntry
from arena.world.shopper import answer_question
from arena.world.types import ShopperProfile
from judging.context import JudgingContext
from judging.types import Check, ShopperEvidence


def shopper_evidence(profile: ShopperProfile, log: Sequence[ToolLogEntry]) -> ShopperEvidence:
    """Count the logged questions, the needed ones, and the held-back constraints the answers revealed."""
    asks = [entry for entry in log if tool_kind(entry.tool) == "ask"]
    revealed: set[int] = set()
    for entry in asks:
        question = entry.arguments.get("question")
        if entry.status == "ok" and isinstance(question, str):
            found = answer_question(profile, question).revealed
            revealed.update(i for i, held in enumerate(profile.held_back) if held in found)
    needed = len(profile.held_back)
    return ShopperEvidence(
        asked=len(asks),
        needed=needed,
        extra=max(0, len(asks) - needed),
        revealed=len(revealed),
        refused=sum(1 for entry in asks if entry.status != "ok"),
    )


def questions_coefficient(evidence: ShopperEvidence, penalty: float) -> float:
    """The share of a success's credit kept after the questions beyond those needed."""
    return max(0.0, 1.0 - penalty * evidence.extra)


def check_shopper(ctx: JudgingContext) -> Check | None:
    """The ``shopper`` Check of a task with a hidden profile; None for a task without one."""
    if ctx.profile is None:
        return None
    evidence = shopper_evidence(ctx.profile, ctx.log)
    value = questions_coefficient(evidence, ctx.config.question_penalty)
    explanation = (
        f"{evidence.asked} questions asked ({evidence.refused} refused), {evidence.needed} needed, "
        f"{evidence.extra} extra; {evidence.revealed} of {evidence.needed} held-back constraints revealed"
    )
    return Check(name="shopper", value=round(value, 6), explanation=explanation, evidence=evidence)
