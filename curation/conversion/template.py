"""The deterministic rationale writer: reasons built from the fact table, phrased by a seed from the trace.

Each rationale is a few clauses, each drawn from a bank of phrasings (:mod:`curation.conversion.phrases`)
and put in a seeded order: what the user wants (the item in the user's words and the
constraints the query states), why this call follows the earlier ones (an empty search, a
candidate for another item, a shop to stay in), the call's salient arguments, and what the
result will be used for. Every fact comes from the table (the query or a result already seen),
and every comparison ("within", "outside", "lacks") is computed, never assumed. The task's own
words (item names, constraint labels and values) make the text differ from task to task; the
seed makes the phrasing differ where they coincide.

A question to the shopper (``ask_user``) names what the user wants, what the request leaves
open that the question asks about (the services and attribute topics it states nothing of),
why ask now (before searching, or to decide between hits already seen), and the question. What
an answer states joins the request: later steps name it as the shopper's, and a "no
preference" answer is said to leave the request as it stands.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from arena.phrasing import number_text
from arena.tools import ToolKind
from arena.types import Service
from arena.world.shopper import SERVICE_WORDS
from arena.world.shopper import words as shopper_words
from curation.conversion import phrases as P
from curation.conversion.facts import Constraint, FactTable, Item, ProductFacts, call_ids
from curation.conversion.step import Step

TEMPLATE_VERSION = "template/1"
MAX_LISTED = 4
_COUNT_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
Choose = Callable[[Sequence[str]], str]
Writer = Callable[[Step, Choose, random.Random], str]


def _count(n: int) -> str:
    return _COUNT_WORDS[n] if n < len(_COUNT_WORDS) else "many"


def _join(parts: Sequence[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def _short_title(title: str | None, rng: random.Random) -> str:
    words = (title or "").split()
    return " ".join(words[: rng.randint(3, 5)]) if words else "untitled"


def _constraint_text(constraint: Constraint, choose: Choose) -> str:
    if constraint.kind == "price":
        return choose(P.PRICE).format(price=constraint.price_text())
    if constraint.kind == "service":
        return choose(P.SERVICE).format(label=constraint.label)
    return choose(P.VALUE).format(label=constraint.label, value=" or ".join(constraint.values))


def _need(step: Step, item: Item, choose: Choose, rng: random.Random) -> str:
    cons = [_constraint_text(c, choose) for c in item.constraints if not c.shopper]
    rng.shuffle(cons)
    joined = choose(P.CONS_JOIN).format(list=_join(cons)) if cons else ""
    said = [_constraint_text(c, choose) for c in item.constraints if c.shopper]
    if said:  # what the shopper's answers added, named as theirs
        joined += choose(P.HEARD_JOIN).format(list=_join(said))
    earlier = any(s.item is not None and s.item != item.position for s in step.facts.searches)
    bank = P.NEED_NEXT if earlier else P.NEED
    return choose(bank).format(item=item.name, cons=joined)


def _filters(arguments: dict[str, object], choose: Choose) -> str:
    parts = []
    if arguments.get("shop_id"):
        parts.append(choose(P.FILTER_SHOP).format(shop=arguments["shop_id"]))
    if arguments.get("price"):
        parts.append(choose(P.FILTER_PRICE).format(price=arguments["price"]))
    if arguments.get("service"):
        parts.append(choose(P.FILTER_SERVICE).format(service=arguments["service"]))
    if arguments.get("sort"):
        parts.append(choose(P.FILTER_SORT).format(sort=arguments["sort"]))
    if isinstance(arguments.get("page"), int) and int(str(arguments["page"])) > 1:
        parts.append(choose(P.FILTER_PAGE).format(page=arguments["page"]))
    return "".join(parts)


def _context(step: Step, item: Item | None, choose: Choose, rng: random.Random) -> str | None:
    """Why this search follows the earlier ones, from what they showed."""
    facts, arguments = step.facts, step.arguments
    shop = arguments.get("shop_id")
    if isinstance(shop, str):
        in_shop = [p for p in facts.products.values() if p.shop_id == shop and p.title]
        if in_shop and item is not None:
            first = in_shop[0]
            title = _short_title(first.title, rng)
            return choose(P.SAME_SHOP).format(pid=first.product_id, title=title, shop=shop, item=item.name)
    same = [s for s in facts.searches if item is not None and s.item == item.position]
    if same and not same[-1].ids:
        prev = same[-1].arguments
        dropped = [
            f"{k} {prev[k]}" for k in ("price", "service", "shop_id") if k in prev and k not in arguments
        ]
        if dropped:
            return choose(P.RELAX).format(prev=prev.get("q", ""), dropped=_join(dropped))
        return choose(P.RETRY).format(prev=prev.get("q", ""))
    others = [s for s in facts.searches if s.ids and s.item is not None and item and s.item != item.position]
    if others:
        search = others[-1]
        first = facts.products[search.ids[0]]
        prev_item = facts.task.items[search.item or 0].name
        title = _short_title(first.title, rng)
        return choose(P.OTHER_ITEM).format(prev_item=prev_item, pid=first.product_id, title=title)
    return None


def _keys(items: Sequence[Item]) -> list[str]:
    return list(dict.fromkeys(c.label for item in items for c in item.of_kind("sku", "attribute")))


def write_search(step: Step, choose: Choose, rng: random.Random) -> str:
    """A search: what the user wants, why now, the query and filters, what the details must show."""
    item = step.item
    q = str(step.arguments.get("q") or "")
    query = choose(P.QUERY).format(q=q, filters=_filters(step.arguments, choose)) if q else ""
    if not q:  # listing a shop without keywords
        query = f"Listing the products of shop {step.arguments.get('shop_id', '')}."
    clauses = [query]
    if item is not None:
        clauses.append(_need(step, item, choose, rng))
        keys = _keys([item])
        if keys and rng.random() < 0.7:
            clauses.append(choose(P.PLAN).format(keys=_join(keys)))
    context = _context(step, item, choose, rng)
    if context:
        clauses.append(context)
    answers, searches = step.facts.answers, step.facts.searches
    first_since = answers and (not searches or searches[-1].seq < answers[-1].seq)
    if first_since and not answers[-1].revealed:  # "no preference" is a fact: the request is all
        clauses.append(choose(P.HEARD_NOTHING))
    rng.shuffle(clauses)
    return " ".join(clauses)


def _observations(products: Sequence[ProductFacts], items: Sequence[Item], choose: Choose) -> list[str]:
    """True statements about the candidates from the search hits: price fit, services."""
    said: list[str] = []
    for constraint in (c for item in items for c in item.of_kind("price")):
        priced = [p for p in products if p.price is not None]
        inside = [p.product_id for p in priced if constraint.admits(p.price or 0.0)]
        outside = [p.product_id for p in priced if not constraint.admits(p.price or 0.0)]
        if inside:
            said.append(choose(P.IN_RANGE).format(ids=_join(inside[:3]), price=constraint.price_text()))
        elif outside:
            said.append(choose(P.OUT_OF_RANGE).format(ids=_join(outside[:3]), price=constraint.price_text()))
        break
    for constraint in (c for item in items for c in item.of_kind("service")):
        known = [p for p in products if p.services is not None]
        have = [p.product_id for p in known if constraint.key in (p.services or ())]
        lack = [p.product_id for p in known if constraint.key not in (p.services or ())]
        if have:
            said.append(choose(P.HAS_SERVICE).format(ids=_join(have[:3]), label=constraint.label))
        elif lack:
            said.append(choose(P.LACKS_SERVICE).format(ids=_join(lack[:3]), label=constraint.label))
        break
    return said


def write_view(step: Step, choose: Choose, rng: random.Random) -> str:
    """A view: the candidates with what the hits showed, an observation, what the details are for."""
    facts = step.facts
    ids = call_ids(step.arguments)
    shown = [facts.products[i] for i in ids if i in facts.products]
    listed = [
        f"{p.product_id} ({_short_title(p.title, rng)}, {number_text(p.price)} pesos)"
        if p.price is not None
        else p.product_id
        for p in shown[:MAX_LISTED]
    ]
    listed += [i for i in ids if i not in facts.products][: max(0, MAX_LISTED - len(listed))]
    rest = len(ids) - len(listed)
    text = _join(listed) + (f" and {_count(rest)} more" if rest > 0 else "")
    positions = sorted({n for n in (facts.item_of(i) for i in ids) if n is not None})
    items = [facts.task.items[n] for n in positions] or list(facts.task.items)
    clauses = [choose(P.CANDIDATES).format(list=text, item=_join([item.name for item in items]))]
    observed = _observations(shown, items, choose)
    if observed:
        sentence = _join(observed[:2])
        clauses.append(sentence[:1].upper() + sentence[1:] + ".")
    keys = _keys(items)
    purpose = choose(P.PURPOSE).format(keys=_join(keys)) if keys else choose(P.PURPOSE_PLAIN)
    clauses.append(purpose)
    head, *tail = clauses
    rng.shuffle(tail)
    return " ".join([head, *tail] if rng.random() < 0.6 else [*tail, head])


def _fact(product: ProductFacts, constraint: Constraint, choose: Choose) -> str | None:
    if constraint.kind == "price" and product.price is not None:
        bank = P.FACT_PRICE_IN if constraint.admits(product.price) else P.FACT_PRICE_OUT
        return choose(bank).format(price=number_text(product.price), range=constraint.price_text())
    if constraint.kind == "service" and product.services is not None:
        bank = P.FACT_SERVICE_IN if constraint.key in product.services else P.FACT_SERVICE_OUT
        return choose(bank).format(label=constraint.label)
    if constraint.kind in ("sku", "attribute") and product.viewed:
        values = product.values(constraint.key)
        wanted = " or ".join(constraint.values)
        if any(v.lower() in values for v in constraint.values):
            return choose(P.FACT_VALUE_IN).format(label=constraint.label, value=wanted)
        if values:
            actual = " or ".join(sorted(values)[:2])
            return choose(P.FACT_VALUE_OUT).format(label=constraint.label, actual=actual, value=wanted)
    return None


def _difference(chosen: ProductFacts, other: ProductFacts, item: Item) -> str | None:
    """A computed reason the other candidate fits the item worse, or None."""
    for constraint in item.constraints:
        if constraint.kind == "price" and chosen.price is not None and other.price is not None:
            if constraint.admits(chosen.price) and not constraint.admits(other.price):
                return f"its price of {number_text(other.price)} pesos is not {constraint.price_text()}"
        if constraint.kind == "service" and chosen.services and other.services is not None:
            if constraint.key in chosen.services and constraint.key not in other.services:
                return f"it does not list {constraint.label}"
        if constraint.kind in ("sku", "attribute") and chosen.viewed and other.viewed:
            wanted = {v.lower() for v in constraint.values}
            if wanted & chosen.values(constraint.key) and not wanted & other.values(constraint.key):
                return f"it has no {constraint.label} {' or '.join(constraint.values)}"
    return None


def _pick(facts: FactTable, pid: str, item: Item, choose: Choose, rng: random.Random) -> list[str]:
    product = facts.products.get(pid)
    if product is None:
        return [choose(P.PICK_BARE).format(pid=pid, item=item.name, title="not shown")]
    said = [f for f in (_fact(product, c, choose) for c in item.constraints) if f]
    title = _short_title(product.title, rng)
    clauses = [
        choose(P.PICK).format(pid=pid, item=item.name, title=title, facts=_join(said))
        if said
        else choose(P.PICK_BARE).format(pid=pid, item=item.name, title=title)
    ]
    rivals = [
        other
        for other in facts.products.values()
        if other.product_id != pid and other.found_by is not None and other.found_by == product.found_by
    ]
    for other in rivals:
        why = _difference(product, other, item)
        if why:
            other_title = _short_title(other.title, rng)
            clauses.append(choose(P.COMPARE).format(other=other.product_id, title=other_title, why=why))
            break
    return clauses


def _basket(facts: FactTable, ids: Sequence[str], choose: Choose) -> str | None:
    products = [facts.products.get(i) for i in ids]
    if not products or any(p is None or p.price is None for p in products):
        return None
    known = [p for p in products if p is not None]
    shops = {p.shop_id for p in known}
    if facts.task.voucher is None and facts.task.budget is None:
        if facts.task.intent == "shop" and len(shops) == 1 and None not in shops:
            return choose(P.ONE_SHOP).format(shop=next(iter(shops)))
        return None
    total = round(sum(p.price or 0.0 for p in known), 2)
    text = choose(P.TOTAL).format(total=number_text(total))
    final = total
    voucher = facts.task.voucher
    if voucher is not None and voucher.applies(total, len(shops)):
        final = round(voucher.price_after(total, len(shops)), 2)
        text += choose(P.AFTER_VOUCHER).format(after=number_text(final))
    elif voucher is not None:
        text += choose(P.NO_VOUCHER).format(threshold=number_text(voucher.threshold))
    if facts.task.budget is not None:
        bank = P.BUDGET_FIT if final <= facts.task.budget else P.BUDGET_OVER
        return text + choose(bank).format(budget=number_text(facts.task.budget))
    return text + "."


def write_recommend(step: Step, choose: Choose, rng: random.Random) -> str:
    """The answer: one clause per item with its computed facts, a comparison, the basket, the ids."""
    facts = step.facts
    ids = call_ids(step.arguments)
    clauses: list[str] = []
    for position, pid in enumerate(ids):
        items = facts.task.items
        item = items[position] if position < len(items) else items[-1]
        clauses += _pick(facts, pid, item, choose, rng)
    basket = _basket(facts, ids, choose)
    if basket:
        clauses.append(basket)
    many = choose(P.RECOMMEND_MANY) if len(ids) > 1 else ""
    answer = choose(P.RECOMMEND).format(ids=", ".join(ids)).rstrip(".") + many + "."
    return " ".join([*clauses, answer] if rng.random() < 0.75 else [answer, *clauses])


# How an ask_user rationale names a service the request leaves open.
_SERVICE_LABELS: dict[Service, str] = {
    "official": "an official store",
    "freeShipping": "free shipping",
    "COD": "cash on delivery",
    "flashsale": "a flash sale",
}
_ANY_SERVICE = frozenset({"service", "perk"})
# Attribute topics a question may ask about, as arena.world.shopper.words reads them.
_ATTRIBUTE_TOPICS = ("brand", "color", "size", "material", "style", "model", "flavor", "scent")


def _open_topics(question: str, items: Sequence[Item]) -> list[str]:
    """What the question asks about that the request (and earlier answers) leave unstated."""
    asked = set(shopper_words(question))
    stated = {c.key for item in items for c in item.of_kind("service")}
    topics = [
        label
        for service, label in _SERVICE_LABELS.items()
        if service not in stated
        and (asked & _ANY_SERVICE or asked & {w for v in SERVICE_WORDS[service] for w in shopper_words(v)})
    ]
    labels = {w for item in items for c in item.constraints for w in shopper_words(c.label)}
    return topics + [topic for topic in _ATTRIBUTE_TOPICS if topic in asked and topic not in labels]


def _quotable(text: str) -> bool:
    """Whether ``text`` stands in its logged JSON as written (a quote of it can be verified)."""
    return bool(text.strip()) and text.isprintable() and '"' not in text and "\\" not in text


def write_ask(step: Step, choose: Choose, rng: random.Random) -> str:
    """A question to the shopper: what the user wants, what the request leaves open, why ask now."""
    facts = step.facts
    items = list(facts.task.items)
    question = str(step.arguments.get("question") or "")
    if len(items) == 1:
        need = _need(step, items[0], choose, rng)
    else:
        need = choose(P.NEED).format(item=_join([item.name for item in items]), cons="")
    topics = _open_topics(question, items)
    clauses = [need, choose(P.ASK_OPEN).format(open=_join(topics)) if topics else choose(P.ASK_OPEN_NONE)]
    if facts.answers and _quotable(facts.answers[-1].answer):
        clauses.append(choose(P.ASK_AGAIN).format(answer=facts.answers[-1].answer.rstrip(".")))
    hits = list(dict.fromkeys(pid for search in facts.searches for pid in search.ids))
    if hits:  # asked after searching: the candidates the answer will decide between
        clauses.append(choose(P.ASK_WHY_LATER).format(ids=_join(hits[:2])))
    else:
        clauses.append(choose(P.ASK_WHY_FIRST))
    asked = choose(P.ASK_QUESTION).format(question=question) if _quotable(question) else ""
    clauses.append(asked or choose(P.ASK_QUESTION_PLAIN))
    if rng.random() < 0.5:  # the question first, then why (what the user wants stays first)
        clauses = [clauses[0], clauses[-1], *clauses[1:-1]]
    return " ".join(clauses)


def write_end(step: Step, choose: Choose, rng: random.Random) -> str:
    """The end of the episode (``terminate``): its status."""
    del rng
    return choose(P.TERMINATE).format(status=step.arguments.get("status", "success"))


def write_compute(step: Step, choose: Choose, rng: random.Random) -> str:
    """A computation over named products (``calculate_voucher``): the basket it prices."""
    del rng
    return choose(P.VOUCHER_CALL).format(ids=", ".join(call_ids(step.arguments)))


def write_other(step: Step, choose: Choose, rng: random.Random) -> str:
    """A call no tool set knows: its tool and arguments as sent."""
    del rng
    arguments = json.dumps(step.arguments, ensure_ascii=False)
    return choose(P.OTHER_CALL).format(tool=step.tool, arguments=arguments)


# One writer per tool kind (``Tool.kind``): a new tool of a kind is written as its kind is.
_WRITERS: dict[ToolKind | None, Writer] = {
    "search": write_search,
    "view": write_view,
    "answer": write_recommend,
    "ask": write_ask,
    "compute": write_compute,
    "end": write_end,
}


def compose(step: Step, attempt: int = 0) -> str:
    """Write one step's rationale (the same step, seed and attempt always give the same text)."""
    rng = random.Random(step.seed * 31 + attempt)

    # ``choice`` draws exactly what ``bank[rng.randrange(len(bank))]`` did, with less in between.
    return _WRITERS.get(step.kind, write_other)(step, rng.choice, rng)


@dataclass(frozen=True)
class TemplateWriter:
    """The deterministic writer (no model): :func:`compose` behind the writer interface."""

    provenance: str = TEMPLATE_VERSION

    async def write(self, step: Step, *, attempt: int, problems: Sequence[str]) -> str:
        """Return the step's rationale; a retry (``attempt`` > 0) draws other phrasings."""
        del problems
        return compose(step, attempt)
