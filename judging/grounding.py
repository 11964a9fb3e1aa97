"""The grounding check: the trajectory reconciled against the tool server's log and the catalog.

- Every tool message must carry exactly the result the server logged for its call id, and
  that call must be the same tool with the same arguments; otherwise its call id is
  *fabricated* (this zeroes the score).
- Every logged call must appear in the trajectory; a call the server ran that the trajectory
  does not show is *hidden* (flagged; it lowers grounding and is axis evidence).
- Every recommended id must have been returned by an earlier, non-fabricated tool result;
  otherwise it is a *hallucinated* product id.
- Prices and attributes the assistant states about a product must match the catalog
  (see :mod:`judging.claims` for what counts as a statement). Over a world that changes
  during the episode (log entries with a ``world_version``), a cited price is reconciled
  against the latest result before the statement that showed that product's price, at the
  world version it came from; a price cited correctly from before a change that the answer
  came after is *stale*: named in the explanation, not a misquote (the outcome, judged at the
  answer's version, is what a stale pick costs).

The pairing itself is :mod:`judging.reconcile` (a fact of the judging context).
"""

from __future__ import annotations

from arena.types import Product
from judging.claims import find_claims
from judging.context import JudgingContext
from judging.facts import result_facts
from judging.types import Check, Claim, GroundingEvidence


def check_grounding(ctx: JudgingContext) -> Check:
    """Reconcile a trajectory with its tool log and the catalog.

    Returns:
        The ``grounding`` Check: 0 when anything is fabricated, else the product of the
        shown-call share, the grounded share of recommended ids, and the correct share of
        claims; its ``GroundingEvidence`` names the fabricated, hidden and hallucinated ids and
        the claims read.
    """
    rec, answer, log = ctx.reconciliation, ctx.answer, ctx.log
    hallucinated = tuple(pid for pid in answer.product_ids if pid not in rec.seen_before_answer)
    claims = _claims(ctx, rec.seen | set(answer.product_ids))
    hidden = rec.hidden_names
    shown = 1 - len(rec.hidden) / len(log) if log else 1.0
    ids_ok = 1 - len(hallucinated) / len(answer.product_ids) if answer.product_ids else 1.0
    claims_ok = sum(c.correct for c in claims) / len(claims) if claims else 1.0
    problems = []
    if rec.fabricated:
        problems.append(f"fabricated tool results: {', '.join(sorted(rec.fabricated))}")
    if hidden:
        problems.append(f"hidden calls: {', '.join(hidden)}")
    if hallucinated:
        problems.append(f"hallucinated product ids: {', '.join(hallucinated)}")
    wrong = [c for c in claims if not c.correct]
    if wrong:
        problems.append(
            "misquoted: " + ", ".join(f"{c.product_id} {c.key}={c.stated} (is {c.actual})" for c in wrong)
        )
    stale = _stale(ctx, claims)
    if stale:
        problems.append("cited before a change: " + ", ".join(stale))
    return Check(
        name="grounding",
        value=0.0 if rec.fabricated else shown * ids_ok * claims_ok,
        explanation="; ".join(problems)
        or f"all {len(rec.matched)} results match the log; answer ids were seen",
        evidence=GroundingEvidence(
            fabricated=rec.fabricated,
            hidden_calls=hidden,
            hallucinated_product_ids=hallucinated,
            claims=tuple(claims),
            shown=shown,
            ids_grounded=ids_ok,
            claims_correct=claims_ok,
        ),
    )


def _claims(ctx: JudgingContext, ids: frozenset[str]) -> list[Claim]:
    texts = [
        "\n".join(filter(None, (m.reasoning_content, m.content)))
        for m in ctx.trajectory.messages
        if m.role == "assistant"
    ]
    mentioned = sorted(pid for pid in ids if any(pid in text for text in texts))
    if not mentioned:
        return []
    found = dict(ctx.products(mentioned))
    if ctx.answer_world_version is None:
        return [claim for text in texts for claim in find_claims(text, found)]
    return _versioned_claims(ctx, found)


def _versioned_claims(ctx: JudgingContext, found: dict[str, Product]) -> list[Claim]:
    """Claims over a changing world: each price against the last logged result that showed it.

    Walks the messages in order; a tool message that is not fabricated contributes its logged
    result's prices at that result's world version. A product no result priced is checked at
    the answer's version (``ctx.products``).
    """
    shown: dict[str, tuple[float, int]] = {}
    claims: list[Claim] = []
    rec, at_answer = ctx.reconciliation, ctx.answer_world_version or 0
    for message in ctx.trajectory.messages:
        if message.role == "tool":
            entry = rec.matched.get(message.tool_call_id or "")
            if entry is not None and entry.status == "ok" and message.tool_call_id not in rec.fabricated:
                version = entry.world_version or 0
                shown |= {pid: (price, version) for pid, price in result_facts(entry.result).prices.items()}
            continue
        if message.role != "assistant":
            continue
        text = "\n".join(filter(None, (message.reasoning_content, message.content)))
        seen = {pid: _priced(p, shown.get(pid)) for pid, p in found.items()}
        for claim in find_claims(text, seen):
            if claim.kind == "price":
                version = shown[claim.product_id][1] if claim.product_id in shown else at_answer
                claim = claim.model_copy(update={"world_version": version})
            claims.append(claim)
    return claims


def _priced(product: Product, shown: tuple[float, int] | None) -> Product:
    return product if shown is None else product.model_copy(update={"price": shown[0]})


def _stale(ctx: JudgingContext, claims: list[Claim]) -> list[str]:
    """Correct price claims from before a change that moved the price by the answer's version."""
    at_answer = ctx.answer_world_version
    if at_answer is None:
        return []
    earlier = [c for c in claims if c.kind == "price" and c.correct and (c.world_version or 0) < at_answer]
    now = ctx.products(sorted({c.product_id for c in earlier})) if earlier else {}
    return [
        f"{c.product_id} price={c.stated} (world version {c.world_version}; "
        f"{now[c.product_id].price:g} at version {at_answer})"
        for c in earlier
        if c.product_id in now and abs(now[c.product_id].price - float(c.actual)) > 0.005
    ]
