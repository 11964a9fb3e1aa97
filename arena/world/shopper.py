"""The simulated shopper behind ``ask_user`` (tool set arena-3): rule-based answers from a hidden profile.

The facts of an answer are decided by rules alone (:func:`answer_question`): a held-back
constraint is revealed only when the question asks for it, by naming its topic (a service's
words, an attribute's key or its value); anything else is "no preference". A question asks
about at most ``MAX_TOPICS`` things (:func:`topics`: the services together are one, every other
word that is not asking vocabulary is one): a broader one asks for nothing, so a question
stuffed with every attribute word cannot empty the profile. Phrasing the facts is
a separate step behind :class:`ShopperPhrasing`, so an LLM with a pinned model could word the
answers later without deciding what they say. Today the only phrasing is :data:`RULE_PHRASING`.

A :class:`ShopperSession` is one episode's shopper: it keeps the questions asked so far and
refuses a loop (the same question ``QUESTION_REPEATS`` times), a flood (more than
``MAX_QUESTIONS``) or a question over ``MAX_TOPICS``. All are agent faults: the tool turns them
into error results.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import Field

from arena.types import Frozen, Service
from arena.world.types import HeldConstraint, HeldService, ShopperProfile

# The one bound on a question's length (the ask_user argument model reads it from here).
MAX_QUESTION_CHARS = 300
# The same question (case, spacing and punctuation aside) asked this many times is a loop.
QUESTION_REPEATS = 3
# More questions than this in one episode are refused: every need fits in far fewer.
MAX_QUESTIONS = 12
# A question asks about at most this many things (``topics``): the services and three words,
# e.g. "a particular service, or a particular brand, colour or size?". Without a bound one
# question naming every attribute word revealed 50 of 67 held-back constraints over 12 worlds.
MAX_TOPICS = 4
NO_PREFERENCE = "No preference beyond what I already said."

# The words that ask about each service; a question naming "service(s)" asks about all four.
SERVICE_WORDS: dict[Service, frozenset[str]] = {
    "official": frozenset({"official", "lazmall", "mall", "authentic", "genuine", "store", "seller"}),
    "freeShipping": frozenset({"shipping", "ship", "ships", "delivery", "deliver", "delivered"}),
    "COD": frozenset({"cod", "cash", "payment", "delivery"}),
    "flashsale": frozenset({"flash", "flashsale", "lazflash", "sale", "deal", "deals", "promo", "promotion"}),
}
_ANY_SERVICE = frozenset({"service", "services", "perk", "perks"})
SERVICE_PHRASES: dict[Service, str] = {
    "official": "it has to come from an official LazMall store",
    "freeShipping": "it has to have free shipping",
    "COD": "I want to pay cash on delivery",
    "flashsale": "it has to be on a LazFlash flash sale",
}
# Spellings that mean the same word in a question and in an attribute key.
_SYNONYMS = {"colour": "color", "colours": "color", "colors": "color", "sized": "size", "sizes": "size"}
_KEY_FILLER = frozenset({"of", "and", "the", "for", "a", "an", "to", "in"})
# Values too vague to be asked for by themselves ("yes" is in every yes-or-no question).
_VAGUE_VALUES = frozenset({"yes", "no", "none", "other", "n/a"})
_WORD = re.compile(r"[a-z0-9][a-z0-9+:.'-]*")

Refusal = Literal["repeated", "too_many", "too_broad"]


def words(text: str) -> tuple[str, ...]:
    """A text's lower-cased words, trailing punctuation off, with colour/color and plurals made one."""
    out: list[str] = []
    for raw in _WORD.findall(text.lower().replace("_", " ")):
        word = raw.rstrip(".:'-")
        word = _SYNONYMS.get(word, word)
        out.append(word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word)
    return tuple(out)


def question_key(question: str) -> str:
    """What makes two questions the same question: their words, in order."""
    return " ".join(words(question))


class ShopperAnswer(Frozen):
    """The facts of one answer: the held-back constraints the question asked for (none: no preference)."""

    revealed: tuple[HeldConstraint, ...] = ()


def _normal(vocabulary: frozenset[str]) -> frozenset[str]:
    return frozenset(w for word in vocabulary for w in words(word))


# The service words as :func:`words` reads them ("services" is "service" there).
_SERVICE_TOPICS: dict[Service, frozenset[str]] = {
    service: _normal(vocabulary | _ANY_SERVICE) for service, vocabulary in SERVICE_WORDS.items()
}


# Words that ask rather than name a need: they never count as a topic (they still match a key).
_ASKING = _normal(
    frozenset(
        """a an the of and or nor but to in on at for with by from about as if than then so not no yes
        what which who whom whose how when where why whether
        do does did is are was were be been being am it its it's this that these those there here
        i i'm me my mine you you're your yours we us our they them their one ones
        any anything some something particular specific certain other else also too either all each
        both more most much many only just really exactly very please thanks thank hi hello ok okay
        need want like prefer preference require required requirement care mind matter important
        wish would should could can will must may might shall have has had get got buy look looking
        ask tell know let before after search searching find help quick question first""".split()
    )
)
# Every word that names a service (with "free" of free shipping): together, one topic.
_SERVICE_NAMING = frozenset().union(*_SERVICE_TOPICS.values()) | _normal(frozenset({"free"}))


def topics(question: str) -> int:
    """How many things a question asks about: the services (all together one) and each other word.

    Every distinct word counts except the asking vocabulary ("do you need a particular ...") and
    the services' words, which count once however many services are named; a two-word key
    ("number of pieces") is two. Nothing here reads a profile: the count is the same for every
    shopper, so a refusal tells the agent nothing about what is held back.
    """
    named = frozenset(words(question)) - _ASKING
    return (1 if named & _SERVICE_NAMING else 0) + len(named - _SERVICE_NAMING)


def asks_for(constraint: HeldConstraint, asked: frozenset[str]) -> bool:
    """Whether a question with the words ``asked`` asks for ``constraint`` (names its topic or value).

    A service is asked for by any of its words or a word for services in general; an attribute
    by every word of its key ("number of pieces") or every word of the value ("1000+"), unless
    the value is a bare yes or no.
    """
    if isinstance(constraint, HeldService):
        return bool(asked & _SERVICE_TOPICS[constraint.service])
    key = frozenset(words(constraint.key)) - _KEY_FILLER
    value = frozenset(words(constraint.value))
    return bool(key and key <= asked) or bool(value - _VAGUE_VALUES and value <= asked)


def answer_question(profile: ShopperProfile, question: str) -> ShopperAnswer:
    """The facts of the answer to ``question``: each held-back constraint it asks for, in profile order.

    A question over ``MAX_TOPICS`` asks for nothing (the session refuses it before it gets here).
    """
    if topics(question) > MAX_TOPICS:
        return ShopperAnswer()
    asked = frozenset(words(question))
    return ShopperAnswer(revealed=tuple(c for c in profile.held_back if asks_for(c, asked)))


class ShopperPhrasing(Protocol):
    """Words an answer's facts; never adds, drops or changes a fact (an LLM may sit here, pinned)."""

    @property
    def version(self) -> str:
        """What phrased the answers (``rules/1``, or a pinned model), for the record."""
        ...

    def phrase(self, question: str, answer: ShopperAnswer) -> str:
        """The shopper's words for ``answer`` (deterministic for the same inputs)."""
        ...


def constraint_phrase(constraint: HeldConstraint) -> str:
    """One held-back constraint in the shopper's words."""
    if isinstance(constraint, HeldService):
        return SERVICE_PHRASES[constraint.service]
    return f"the {constraint.key.replace('_', ' ')} has to be {constraint.value}"


@dataclass(frozen=True)
class RulePhrasing:
    """The rule-based phrasing: one sentence per revealed constraint, or :data:`NO_PREFERENCE`."""

    version: str = "rules/1"

    def phrase(self, question: str, answer: ShopperAnswer) -> str:
        """Join the revealed constraints' phrases into one sentence."""
        del question
        if not answer.revealed:
            return NO_PREFERENCE
        said = "; ".join(constraint_phrase(c) for c in answer.revealed)
        return f"Yes: {said}."


RULE_PHRASING = RulePhrasing()


class ShopperReply(Frozen):
    """What one question got: the answer's facts and words, or why it was refused."""

    answer: ShopperAnswer | None = None
    text: str = ""
    refused: Refusal | None = None
    detail: str = Field(default="", max_length=200)


class ShopperSession:
    """One episode's shopper: the hidden profile and the questions asked so far (thread-safe)."""

    def __init__(self, profile: ShopperProfile, *, phrasing: ShopperPhrasing = RULE_PHRASING) -> None:
        self.profile = profile
        self.phrasing = phrasing
        self._asked: Counter[str] = Counter()
        self._lock = threading.Lock()

    def ask(self, question: str) -> ShopperReply:
        """Answer one question, or refuse a loop, a flood or a question over the bound (an error result)."""
        key = question_key(question)
        with self._lock:
            if sum(self._asked.values()) >= MAX_QUESTIONS:
                return ShopperReply(
                    refused="too_many", detail=f"at most {MAX_QUESTIONS} questions per episode"
                )
            self._asked[key] += 1
            if self._asked[key] >= QUESTION_REPEATS:
                return ShopperReply(
                    refused="repeated", detail=f"the same question asked {self._asked[key]} times"
                )
        if (named := topics(question)) > MAX_TOPICS:
            return ShopperReply(
                refused="too_broad",
                detail=f"it asks about {named} things; ask about at most {MAX_TOPICS} per question "
                "(the services count as one)",
            )
        answer = answer_question(self.profile, question)
        return ShopperReply(answer=answer, text=self.phrasing.phrase(question, answer))
