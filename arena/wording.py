"""Text normalisation of task wording: normalised queries, tokens, and content shingles for near-duplicates.

Two uses share these rules so they agree: the leak-cluster and audit rules (same normalised
query; near-duplicate wording), and the mention check (does the query name a constraint).
Content shingles drop what every query says (openers, connectors, price words, units, the
voucher rule block) so that two queries only look alike when their *content* is alike.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

from arena.phrasing import SERVICE_SYNONYMS, template_texts

_NON_WORD = re.compile(r"[^0-9a-z.]+")
_THOUSANDS = re.compile(r"(?<=[0-9]),(?=[0-9]{3}(?![0-9]))")
_NUMBER_DOT = re.compile(r"(?<![0-9])\.|\.(?![0-9])")

# Function words and the vocabulary of the query templates (ours and ShoppingBench's):
# they carry no content, so two queries never look alike because of them.
BOILERPLATE: frozenset[str] = frozenset(
    """
    a an the and or but of for with without in on at to from by as is are be been was it its this that
    these those there here which who whose what where when while than then so such some any each every
    both either all also too very just only really please kindly can could would should will shall may
    might must do does did i im i'm me my mine we our you your u they them their one ones item items
    product products thing things something stuff option options choice choices
    looking look find finding show showing need needs needed want wanted wanting help search searching
    get buy buying purchase purchasing order ordering recommend suggest see check hunting hunt seeking
    seek like love prefer preferably preferred ideally pick picking got have has had give list lists
    available availability offer offers offering offered sell sells selling sold sale
    price priced pricing cost costs costing costly pay paying paid spend spending budget
    under over above below between less more least most max maximum min minimum up within around about
    cheaper pricier exceed exceeding exceeds not no greater higher lower range ranging upto
    peso pesos php ₱ phil philippine
    also plus additionally another other first second third fourth lastly finally next
    shop shops store stores seller sellers same single one two three four
    """.split()
)

_STEM_EXCEPTIONS = frozenset({"ss", "us", "is", "as", "yes", "plus", "glass", "gas", "bus", "series", "news"})


def normalise_text(text: str) -> str:
    """Lower-case, NFKC-fold and collapse ``text`` to words and numbers separated by single spaces.

    Dots survive only inside numbers (``6.7`` stays, ``end.`` loses its dot), so prices and
    sizes keep their value while sentence punctuation disappears.
    """
    folded = _THOUSANDS.sub("", unicodedata.normalize("NFKC", text).casefold())
    spaced = _NON_WORD.sub(" ", folded)
    return " ".join(_NUMBER_DOT.sub(" ", spaced).split())


def normalise_query(query: str) -> str:
    """Return the normalised form of a query used by the same-query rule (words, numbers, one space)."""
    return normalise_text(query)


@lru_cache(maxsize=65536)
def stem(token: str) -> str:
    """Strip a plural ending, cheaply (``shirts`` -> ``shirt``, ``boxes`` -> ``box``); numbers untouched."""
    if len(token) <= 3 or token in _STEM_EXCEPTIONS or token[0].isdigit():
        return token
    if token.endswith("ies") and len(token) > 4:
        return token[:-3] + "y"
    if token.endswith(("ches", "shes", "xes", "sses", "zes")):
        return token[:-2]
    if token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


def tokens(text: str) -> list[str]:
    """Return the stemmed tokens of ``text`` after normalisation."""
    return [stem(t) for t in normalise_text(text).split()]


def _service_phrases() -> list[tuple[str, str]]:
    # (padded normalised phrase, padded token), longest phrases first so "cash on delivery" wins over "cod".
    pairs = [
        (f" {normalise_text(phrase)} ", f" svc{service.lower()} ")
        for service, phrases in SERVICE_SYNONYMS.items()
        for phrase in phrases
    ]
    return sorted(pairs, key=lambda pair: len(pair[0]), reverse=True)


def canonical_services(text: str) -> str:
    """Replace every service phrase (``LazMall``, ``cash on delivery``...) by one canonical token.

    A paraphrase that swaps "free delivery" for "ships free" then still shares that token.
    """
    normalised = f" {normalise_text(text)} "
    for phrase, token in _SERVICE_PHRASES:
        if phrase in normalised:
            normalised = normalised.replace(phrase, token)
    return normalised.strip()


def strip_voucher_block(query: str) -> str:
    """Drop the paragraphs that state the budget and voucher rules (identical boilerplate across tasks)."""
    paragraphs = [p for p in re.split(r"\n\s*\n", query) if p.strip()]
    kept = [p for p in paragraphs if "voucher" not in p.casefold() and "budget" not in p.casefold()]
    return "\n\n".join(kept) if kept else query


def _template_words() -> frozenset[str]:
    # Every word our query templates print around the values (placeholders removed) is boilerplate.
    words: set[str] = set()
    for text in template_texts():
        words.update(stem(t) for t in normalise_text(re.sub(r"\{[a-z_]+\}", " ", text)).split())
    return frozenset(words)


def content_tokens(query: str, *, schema_words: Iterable[str] = ()) -> list[str]:
    """Return the content tokens of a query: voucher block, boilerplate and punctuation removed, stemmed.

    Args:
        query: the query text.
        schema_words: more words to drop, e.g. the task's own attribute and sku key names, which
            templates print ("whose phone case type is ...") but which carry no content.
    """
    schema = {stem(t) for w in schema_words for t in normalise_text(w).split()}
    text = canonical_services(strip_voucher_block(query))
    out: list[str] = []
    for raw in text.split():
        token = stem(raw)
        if token in _STOP or raw in _STOP or token in schema or (len(raw) == 1 and raw.isalpha()):
            continue
        out.append(token)
    return out


def shingles(query: str, *, schema_words: Iterable[str] = ()) -> set[str]:
    """Return the near-duplicate shingles of a query: content unigrams plus adjacent content bigrams.

    Unigrams make the set robust to clause reordering; bigrams keep "red cotton" apart from
    "cotton red"-free queries that merely share vocabulary.
    """
    words = content_tokens(query, schema_words=schema_words)
    grams = set(words)
    grams.update(f"{a} {b}" for a, b in zip(words, words[1:], strict=False))
    return grams


_STOP = BOILERPLATE | _template_words()
_SERVICE_PHRASES = _service_phrases()


def jaccard(a: set[str], b: set[str]) -> float:
    """Return the Jaccard similarity of two shingle sets (0 when both are empty)."""
    if not a and not b:
        return 0.0
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)
