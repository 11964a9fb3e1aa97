"""The template writer's word banks: several phrasings of every clause, so no two tasks share one skeleton.

Placeholders are filled by :mod:`curation.conversion.template` with facts from the fact table
only. A bank never prints a digit of its own (counts are words), so every number in a
rationale is a fact the verifier can look up.
"""

from __future__ import annotations

# Search: what the user wants (item in the user's words, then the constraints it comes with).
NEED = (
    "The user wants {item}{cons}.",
    "Needed: {item}{cons}.",
    "The request names {item}{cons}.",
    "What the shopper asks for is {item}{cons}.",
    "I am after {item}{cons}.",
    "This is about the {item}{cons}.",
)
NEED_NEXT = (
    "Next comes the {item}{cons}.",
    "Now for the {item}{cons}.",
    "The other item is the {item}{cons}.",
    "Moving on to the {item}{cons}.",
)
CONS_JOIN = (", with {list}", " ({list})", "; it should have {list}", ", which must come with {list}")
PRICE = ("a price {price} pesos", "a cost {price}", "a price tag {price} pesos", "a price {price}")
SERVICE = ("{label}", "{label} offered", "{label} available")
VALUE = ("{label} {value}", "{value} as the {label}", "{label} of {value}", "the {label} {value}")

# Search: the call itself (the query is quoted as sent; filters follow).
QUERY = (
    'Searching for "{q}"{filters}.',
    'I will query find_product with "{q}"{filters}.',
    'Query: "{q}"{filters}.',
    'Let me run "{q}" through the search{filters}.',
    'The search terms are "{q}"{filters}.',
    'So I search "{q}"{filters}.',
)
FILTER_PRICE = (
    " with the price filter {price}",
    " filtering the price to {price}",
    " and price range {price}",
)
FILTER_SERVICE = (" filtered to {service}", " with the {service} filter", " keeping {service} only")
FILTER_SHOP = (" inside shop {shop}", " in shop {shop}", " restricted to shop {shop}")
FILTER_PAGE = (" on page {page}", ", page {page}")
FILTER_SORT = (" sorted by {sort}", " in {sort} order")

# Search: why this search follows the earlier ones.
RELAX = (
    'The search "{prev}" with {dropped} came back empty, so I drop that filter.',
    'Nothing matched "{prev}" with {dropped}; trying without it.',
    'With {dropped}, "{prev}" found no product, so that filter goes.',
)
RETRY = (
    'The earlier search "{prev}" found no product.',
    'Nothing came back for "{prev}".',
    '"{prev}" returned an empty page.',
)
OTHER_ITEM = (
    "For the {prev_item} there is {pid} ({title}).",
    "{pid} ({title}) already covers the {prev_item}.",
    "The {prev_item} has a candidate in {pid}, {title}.",
)
SAME_SHOP = (
    "{pid} ({title}) is sold by shop {shop}, so I look for the {item} there.",
    "Shop {shop} has {pid} ({title}); the {item} should come from the same shop.",
    "Since {pid} is in shop {shop}, I search that shop for the {item}.",
)
PLAN = (
    "Search hits do not list the {keys}; the product details will.",
    "The {keys} will need the product details.",
    "I will confirm the {keys} on the product pages.",
    "Checking the {keys} comes after the search.",
)

# View: the candidates, an observation from the hits, and what the details are for.
CANDIDATES = (
    "Candidates for the {item} from the results: {list}.",
    "The hits to compare for the {item} are {list}.",
    "{list} come up for the {item}.",
    "Worth a closer look for the {item}: {list}.",
    "From the search for the {item}: {list}.",
)
IN_RANGE = (
    "{ids} fit the {price} pesos range",
    "{ids} are priced {price}",
    "{ids} stay within {price} pesos",
)
OUT_OF_RANGE = ("{ids} fall outside {price} pesos", "{ids} miss the {price} pesos range")
HAS_SERVICE = ("{ids} offer {label}", "{ids} list {label}")
LACKS_SERVICE = ("{ids} do not list {label}", "{ids} lack {label}")
SAME_SHOP_IDS = ("{ids} share shop {shop}", "{ids} are all in shop {shop}")
PURPOSE = (
    "Viewing them to check the {keys}.",
    "The details should show the {keys}.",
    "I will open their details for the {keys}.",
    "Their product pages tell the {keys}.",
)
PURPOSE_PLAIN = (
    "Viewing their descriptions and variants before choosing.",
    "The details come next, to choose between them.",
    "I will read their product pages first.",
)

# Recommend: one clause per item, an optional comparison, the basket, and the answer.
PICK = (
    "{pid} covers the {item}, {facts}.",
    "For the {item}, {pid} ({title}): {facts}.",
    "{pid} is the pick for the {item}; {facts}.",
    "The {item} goes to {pid}, {facts}.",
)
PICK_BARE = ("{pid} is the pick for the {item}.", "For the {item}: {pid} ({title}).")
FACT_PRICE_IN = ("{price} pesos, which is {range}", "at {price} pesos ({range}, as asked)")
FACT_PRICE_OUT = ("{price} pesos, which is not {range}", "at {price} pesos, not {range}")
FACT_SERVICE_IN = ("it offers {label}", "{label} is available")
FACT_SERVICE_OUT = ("it does not list {label}", "no {label}")
FACT_VALUE_IN = ("{label} {value} confirmed", "its {label} is {value}")
FACT_VALUE_OUT = ("its {label} shows {actual}, not {value}", "{label} {actual} rather than {value}")
COMPARE = (
    "{other} ({title}) was another option, but {why}.",
    "Against {other}: {why}.",
    "{other} loses out: {why}.",
)
TOTAL = ("Together they cost {total} pesos", "The basket comes to {total} pesos")
AFTER_VOUCHER = ("; the voucher brings it to {after}", ", {after} after the voucher")
NO_VOUCHER = (
    "; the voucher does not apply (threshold {threshold})",
    ", and the voucher needs a total above {threshold}",
)
BUDGET_FIT = (", within the budget of {budget}.", ", inside the {budget} budget.")
BUDGET_OVER = (", above the budget of {budget}.", ", over the {budget} budget.")
ONE_SHOP = ("All of them come from shop {shop}.", "Every pick is in shop {shop}.")
RECOMMEND = (
    "Recommending {ids}.",
    "So I recommend {ids}.",
    "Final answer: {ids}.",
    "I will recommend {ids} to the user.",
    "That makes {ids} the recommendation.",
)
RECOMMEND_MANY = (" in the order the user listed the items", " one per requested item")

# Terminate and the tools without a bank of their own.
TERMINATE = (
    "The recommendation is in; ending with {status}.",
    "Done: closing the conversation as {status}.",
    "Nothing is left to do, so I terminate with {status}.",
    "That completes the request; status {status}.",
)
VOUCHER_CALL = (
    "Pricing the basket {ids} with the voucher.",
    "Checking the voucher on the basket {ids}.",
    "Let me see what the voucher does to {ids}.",
)
OTHER_CALL = ("Calling {tool} with {arguments}.", "Next, {tool} with {arguments}.")

# ask_user (tool set arena-3): what the request leaves open, why ask now, the question itself.
ASK_OPEN = (
    "The request says nothing about {open}.",
    "Nothing in the request settles {open}.",
    "The user has not said whether {open} matter.",
    "Still open after the request: {open}.",
)
ASK_OPEN_NONE = (
    "The request may leave out a need that decides the pick.",
    "Something unsaid could still decide which listing fits.",
)
ASK_WHY_FIRST = (
    "Any of that could change which listing fits, so I ask before searching.",
    "Asking first keeps the search from chasing the wrong listing.",
    "One question now is cheaper than a wrong pick later.",
)
ASK_WHY_LATER = (
    "Before choosing between {ids}, I check whether any of that matters.",
    "It could decide between {ids}, so I ask now.",
    "{ids} differ on such things, so the answer decides between them.",
)
ASK_AGAIN = (
    'The earlier answer, "{answer}", left this open.',
    'The shopper already answered "{answer}"; this asks about something else.',
)
ASK_QUESTION = (
    'I ask the shopper: "{question}"',
    'The question for the shopper: "{question}"',
    'So I ask the shopper: "{question}"',
)
ASK_QUESTION_PLAIN = ("I put the question to the shopper.", "So I ask the shopper.")

# After an answer: the constraints it added, or that it added none.
HEARD_JOIN = (
    ", and from the shopper's answer {list}",
    "; the shopper added {list}",
    ", plus {list}, as the shopper said",
)
HEARD_NOTHING = (
    "The shopper has no preference beyond the request, so its terms are all there is.",
    "The shopper's answer added nothing, so the request stands as stated.",
    "No further need came from the shopper.",
)
