"""Word banks of the query templates: how a service, a price, a variant, an attribute or a voucher is said.

Every surface form a template may print for a service is listed in ``SERVICE_SYNONYMS``, which
the mention check and the near-duplicate rule also read, so a new phrasing cannot silently
fail either of them (a test asserts every rendered service phrase contains a synonym).
"""

from __future__ import annotations

from arena.types import Service

# How each service may be named in a query (case-insensitive, after normalisation).
SERVICE_SYNONYMS: dict[Service, tuple[str, ...]] = {
    "official": ("LazMall", "Laz Mall", "official store", "official shop", "official seller", "mall store"),
    "freeShipping": (
        "free shipping",
        "free delivery",
        "ships free",
        "ship for free",
        "shipping is free",
        "delivery is free",
        "no shipping fee",
        "free postage",
    ),
    "COD": ("cash on delivery", "COD", "pay on delivery", "payment on delivery", "pay upon delivery"),
    "flashsale": ("LazFlash", "Laz Flash", "flash sale", "flash deal", "flashsale"),
}

# Modifier register: follows the item ("running shoes <...>").
SERVICE_MODIFIERS: dict[Service, tuple[str, ...]] = {
    "official": ("from LazMall", "sold on LazMall", "from an official store", "with LazMall perks"),
    "freeShipping": ("with free shipping", "that ships free", "with free delivery", "with no shipping fee"),
    "COD": ("with cash on delivery", "with COD", "that I can pay for on delivery (COD)", "payable by COD"),
    "flashsale": ("on a LazFlash deal", "in a flash sale", "with a LazFlash discount", "on flash sale"),
}

# Statement register: a clause of its own ("it ships free").
SERVICE_STATEMENTS: dict[Service, tuple[str, ...]] = {
    "official": ("it should come from LazMall", "it must be sold by an official store"),
    "freeShipping": ("shipping is free", "it should have free delivery"),
    "COD": ("I want to pay cash on delivery", "it must offer COD"),
    "flashsale": ("it should be on a LazFlash deal", "it must be part of a flash sale"),
}

CURRENCY: tuple[str, ...] = ("pesos", "PHP", "Philippine pesos", "peso")

PRICE_MODIFIERS: dict[str, tuple[str, ...]] = {
    "less than": ("priced under {high} {cur}", "costing at most {high} {cur}", "for {high} {cur} or less"),
    "greater than": ("priced above {low} {cur}", "costing at least {low} {cur}", "for over {low} {cur}"),
    "between": (
        "priced between {low} and {high} {cur}",
        "costing from {low} to {high} {cur}",
        "in the {low} to {high} {cur} range",
    ),
}

PRICE_STATEMENTS: dict[str, tuple[str, ...]] = {
    "less than": ("it should cost at most {high} {cur}", "the price must stay under {high} {cur}"),
    "greater than": ("it should cost more than {low} {cur}", "the price should be at least {low} {cur}"),
    "between": ("the price should be between {low} and {high} {cur}", "it should cost {low} to {high} {cur}"),
}

# Phrases the mention check accepts as giving a price bound's direction (matched as whole words).
PRICE_DIRECTION_PHRASES: dict[str, tuple[str, ...]] = {
    "less than": (
        "under",
        "below",
        "less",
        "at most",
        "max",
        "maximum",
        "within",
        "cheaper",
        "lower",
        "up to",
        "beneath",
        "no more than",
        "not more than",
        "not exceeding",
        "not exceed",
    ),
    "greater than": (
        "over",
        "above",
        "more than",
        "at least",
        "min",
        "minimum",
        "greater",
        "higher",
        "exceeding",
        "upwards",
        "starting",
    ),
    "between": ("between", "from", "to", "range", "ranging"),
}

SKU_MODIFIERS: tuple[str, ...] = ("in {key} {value}", "with {key} {value}", "in the {value} {key} option")
SKU_COLOUR_MODIFIERS: tuple[str, ...] = ("in {value}", "in the colour {value}", "in {value} colour")
SKU_STATEMENTS: tuple[str, ...] = ("the {key} should be {value}", "I want the {value} {key} variant")

ATTRIBUTE_MODIFIERS: tuple[str, ...] = (
    "with {key} {value}",
    "whose {key} is {value}",
    "that is {value} ({key})",
    "having {value} as {key}",
)
ATTRIBUTE_STATEMENTS: tuple[str, ...] = ("its {key} should be {value}", "the {key} must be {value}")

PRODUCT_OPENERS: tuple[str, ...] = (
    "I'm looking for {item}",
    "Looking for {item}",
    "Show me {item}",
    "Can you find me {item}",
    "I need {item}",
    "Help me find {item}",
    "Find {item}",
    "I want to buy {item}",
    "Search for {item}",
    "I'd like to get {item}",
)
PRODUCT_CLOSINGS: tuple[str, ...] = (
    "",
    "",
    " What do you have?",
    " Any suggestions?",
    " Please show me some options.",
)
STATEMENT_LEADS: tuple[str, ...] = ("", "", "Also, ", "Note that ", "One more thing: ")

SHOP_OPENERS: tuple[str, ...] = (
    "Find a shop that sells all of these:",
    "I'm looking for one store that offers the following items:",
    "Which shop carries all of these products?",
    "Looking for a seller that has every one of these:",
    "Help me find a single shop with these items:",
)
SHOP_CLOSINGS: tuple[str, ...] = (
    "All of them must come from the same shop.",
    "The shop should sell all of these products.",
    "Please show me a store that has them all.",
    "",
)
MULTI_OPENERS: tuple[str, ...] = (
    "I'm shopping for a few things:",
    "Looking for these products:",
    "I need the following items:",
    "Help me buy these:",
)
ORDINALS: tuple[str, ...] = ("First", "Second", "Third", "Fourth")

BUDGET_LEADS: tuple[str, ...] = (
    "My budget is only `{budget}`, but I have a voucher with the following rules:",
    "I can spend at most {budget} pesos in total, and I have a voucher:",
    "My total budget is {budget} PHP. I also have a voucher that works like this:",
)
VOUCHER_SCOPE: dict[str, tuple[str, ...]] = {
    "platform": ("The voucher applies to all products.", "It works on any product from any shop."),
    "shop": (
        "The voucher only applies to the products from the same shop.",
        "It only works when every item comes from the same shop.",
    ),
}
# Words the mention check accepts as naming the voucher's scope (normalised phrases).
VOUCHER_SCOPE_WORDS: dict[str, tuple[str, ...]] = {
    "platform": (
        "all products",
        "any product",
        "any shop",
        "platform",
        "every product",
        "all items",
        "any store",
    ),
    "shop": (
        "same shop",
        "same store",
        "one shop",
        "single shop",
        "same seller",
        "one store",
        "shop voucher",
    ),
}
VOUCHER_THRESHOLD: tuple[str, ...] = (
    "It is valid only when the total price of the products exceeds `{threshold}`.",
    "The order total must reach at least {threshold} pesos to use it.",
    "It needs a minimum spend of {threshold} PHP.",
)
VOUCHER_FIXED: tuple[str, ...] = (
    "It provides a fixed discount of `{face_value}`.",
    "It takes {face_value} pesos off the total.",
)
VOUCHER_PERCENTAGE: tuple[str, ...] = (
    "It provides a percentage discount of `{percent}%` with a cap of `{cap}`.",
    "It gives {percent}% off, up to a maximum discount of {cap} pesos.",
)


def key_text(key: str) -> str:
    """Turn a catalog key (``color_family``, ``fa_pattern``) into words for a query."""
    words = key.replace("_", " ").split()
    if len(words) > 1 and words[0] in {"fa", "sku"}:
        words = words[1:]
    return " ".join(words) or key


def is_colour_key(key: str) -> bool:
    """Return whether a variant key names a colour (rendered as "in black" rather than "with color black")."""
    lowered = key.casefold()
    return "color" in lowered or "colour" in lowered


def number_text(value: float) -> str:
    """Print a price or amount the way a shopper would: no ``.0``, at most two decimals."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.2f}".rstrip("0").rstrip(".")


def template_texts() -> list[str]:
    """Return every template string of the word banks (their words are boilerplate to the near-dup rule)."""
    texts: list[str] = []
    for bank in (SERVICE_MODIFIERS, SERVICE_STATEMENTS, PRICE_MODIFIERS, PRICE_STATEMENTS, VOUCHER_SCOPE):
        for entries in bank.values():
            texts.extend(entries)
    for entries in (
        CURRENCY,
        SKU_MODIFIERS,
        SKU_COLOUR_MODIFIERS,
        SKU_STATEMENTS,
        ATTRIBUTE_MODIFIERS,
        ATTRIBUTE_STATEMENTS,
        PRODUCT_OPENERS,
        PRODUCT_CLOSINGS,
        STATEMENT_LEADS,
        SHOP_OPENERS,
        SHOP_CLOSINGS,
        MULTI_OPENERS,
        ORDINALS,
        BUDGET_LEADS,
        VOUCHER_THRESHOLD,
        VOUCHER_FIXED,
        VOUCHER_PERCENTAGE,
    ):
        texts.extend(entries)
    return texts
