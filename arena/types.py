"""The shared vocabulary of the shopping world: products, tasks, chat messages, trajectories, tool logs.

Every model is a frozen pydantic v2 model that forbids unknown fields, so a value that
crosses a boundary (file, HTTP, database) is either exactly right or rejected with a reason.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import (
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from arena.arguments import ArgumentError, parse_arguments
from arena.frozen import (
    F,
    Frozen,
    Sparse,
    canonical_json,
    content_hash,
    finite,
    result_hash,
    validate_row,
)

# The base lives in arena.frozen; the rest of the code imports it from here.
__all__ = [
    "Frozen",
    "Sparse",
    "F",
    "validate_row",
    "canonical_json",
    "content_hash",
    "result_hash",
    "finite",
]

Intent = Literal["product", "shop", "voucher", "knowledge"]
Service = Literal["official", "freeShipping", "COD", "flashsale"]
SERVICES: tuple[Service, ...] = ("official", "freeShipping", "COD", "flashsale")
Difficulty = Literal["easy", "medium", "hard"]
Pool = Literal["practice", "held_out", "retired", "never_touch"]
POOLS: tuple[Pool, ...] = ("practice", "held_out", "retired", "never_touch")

TRAJECTORY_SCHEMA: Literal["arena.trajectory/1"] = "arena.trajectory/1"

# How an episode ended, as the validator saw it. Everything but "completed" is a miner fault
# and scores 0 with this reason; none of them is ever an exception on our side.
EpisodeEnd = Literal[
    "completed",  # the miner returned a well-formed trajectory in time
    "timeout",  # no complete response before the hard deadline
    "malformed",  # response body did not parse or failed the trajectory schema
    "too_large",  # response exceeded the byte or JSON-depth cap
    "bad_signature",  # response signature missing or invalid
    "miner_error",  # HTTP error status, connection refused, circuit open
]
EPISODE_ENDS: tuple[EpisodeEnd, ...] = (
    "completed",
    "timeout",
    "malformed",
    "too_large",
    "bad_signature",
    "miner_error",
)


# --------------------------------------------------------------------------- products


class Product(Frozen):
    """One catalog product in ShoppingBench's schema (after its preprocessing)."""

    product_id: str = Field(min_length=1)
    shop_id: str = Field(min_length=1)
    brand: str = ""
    category: str = ""
    title: str = Field(min_length=1)
    short_description: str = ""
    description: str = ""
    specification: str = ""
    price: float = Field(ge=0)
    sold_count: int = Field(ge=0)
    # variant key -> {option: value}; ShoppingBench numbers variants "1".."9".
    sku_options: dict[str, dict[str, str]] = Field(default_factory=dict)
    # attribute key -> values, lower-cased as in ShoppingBench's documents.
    attributes: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    service: tuple[Service, ...] = ()
    main_image_url: str = ""
    product_url: str = ""

    @field_validator("product_id", "shop_id", mode="before")
    @classmethod
    def _ids_are_strings(cls, value: Any) -> Any:
        # ShoppingBench dumps ids as strings, but hand-made catalogs often use numbers.
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("sku_options", mode="before")
    @classmethod
    def _sku_keys_are_strings(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {str(k): v for k, v in value.items()}
        return value

    def search_text(self) -> str:
        """Return the text ShoppingBench indexes: title, SKU option values, attribute values."""
        sku_values = sorted({v for variant in self.sku_options.values() for v in variant.values()})
        attr_values = sorted({v for values in self.attributes.values() for v in values})
        return "\n".join([self.title, " ".join(sku_values), " ".join(attr_values)])


# --------------------------------------------------------------------------- tasks


class PriceConstraint(Frozen):
    """A price constraint of a gold item, in ShoppingBench's three modes (bounds inclusive)."""

    mode: Literal["less than", "greater than", "between"]
    low: float | None = None
    high: float | None = None

    @model_validator(mode="after")
    def _bounds_fit_mode(self) -> PriceConstraint:
        if self.mode in ("greater than", "between") and self.low is None:
            raise ValueError(f"price mode {self.mode!r} needs a lower bound")
        if self.mode in ("less than", "between") and self.high is None:
            raise ValueError(f"price mode {self.mode!r} needs an upper bound")
        if self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError(f"price bounds reversed: {self.low} > {self.high}")
        return self

    def contains(self, price: float) -> bool:
        """Return whether ``price`` satisfies this constraint, exactly as ShoppingBench scores it."""
        if self.mode == "less than":
            return self.high is not None and price <= self.high
        if self.mode == "greater than":
            return self.low is not None and price >= self.low
        return self.low is not None and self.high is not None and self.low <= price <= self.high


class GoldItem(Frozen):
    """One item of a task's ground truth: the gold product id and the constraints it must meet."""

    product_id: str = Field(min_length=1)
    # ShoppingBench allows several reference titles; every public task has exactly one.
    titles: tuple[str, ...] = Field(min_length=1)
    price: tuple[PriceConstraint, ...] = ()
    service: tuple[Service, ...] = ()
    # One mapping per requested variant, {option: value}; ShoppingBench's `sku_options` list.
    sku_options: tuple[dict[str, str], ...] = ()
    # One mapping per requested attribute, {key: [values]}; ShoppingBench's `attributes` list.
    attributes: tuple[dict[str, tuple[str, ...]], ...] = ()
    # The full reference product where the source carries one (ShoppingBench's knowledge tasks
    # give the whole record as their reward), so a catalog can be rebuilt from the task alone.
    product: Product | None = None

    def constraint_count(self) -> int:
        """Count the constraints beyond the title (used for difficulty and by the judge)."""
        sku = sum(len(option) for option in self.sku_options)
        attrs = sum(len(values) for attr in self.attributes for values in attr.values())
        return len(self.price) + len(self.service) + sku + attrs


class Voucher(Frozen):
    """A voucher of a voucher task, with ShoppingBench's fields and its application rule."""

    voucher_type: Literal["platform", "shop"]
    threshold: float = Field(ge=0)
    discount_type: Literal["fixed", "percentage"]
    face_value: float | None = Field(default=None, ge=0)
    discount: float | None = Field(default=None, gt=0, lt=1)
    cap: float | None = Field(default=None, ge=0)
    price_after_voucher: float | None = None

    @model_validator(mode="after")
    def _fields_fit_type(self) -> Voucher:
        if self.discount_type == "fixed" and self.face_value is None:
            raise ValueError("a fixed voucher needs face_value")
        if self.discount_type == "percentage" and (self.discount is None or self.cap is None):
            raise ValueError("a percentage voucher needs discount and cap")
        return self

    def applies(self, total: float, shop_count: int) -> bool:
        """Return whether the voucher can be used on a basket (type and threshold rules)."""
        same_shop_ok = self.voucher_type == "platform" or shop_count == 1
        return same_shop_ok and total >= self.threshold

    def price_after(self, total: float, shop_count: int) -> float:
        """Return the basket total after the voucher, or ``total`` where it does not apply."""
        if not self.applies(total, shop_count):
            return total
        if self.discount_type == "fixed":
            return total - (self.face_value or 0.0)
        rate, cap = self.discount or 0.0, self.cap or 0.0
        return max(total * (1 - rate), total - cap)


class Task(Frozen):
    """A shopping task: the user's query and its structured ground truth.

    ``task_id`` is a content hash of the fields that define the task (intent, query, gold,
    voucher, budget, knowledge attribute); pool and cluster are bookkeeping and may change
    with ``model_copy`` without changing the id.
    """

    task_id: str = ""
    intent: Intent
    query: str = Field(min_length=1)
    gold: tuple[GoldItem, ...] = Field(min_length=1)
    voucher: Voucher | None = None
    budget: float | None = Field(default=None, gt=0)
    knowledge_attribute: str | None = None
    # The row's original Knowledge_Attribute where it was a JSON number (ShoppingBench has a
    # few, e.g. years); ``knowledge_attribute`` holds its string form. Not part of the task id.
    knowledge_attribute_raw: int | float | None = None
    difficulty: Difficulty = "medium"
    catalog_version: str | None = None
    generator_version: str = "import"
    source: str = "generated"
    leak_cluster: str | None = None
    pool: Pool = "held_out"

    @model_validator(mode="after")
    def _check_and_address(self) -> Task:
        if self.intent == "voucher" and (self.voucher is None or self.budget is None):
            raise ValueError("a voucher task needs a voucher and a budget")
        if self.intent == "product" and len(self.gold) != 1:
            raise ValueError("a product task has exactly one gold item")
        expected = task_content_id(self)
        if not self.task_id:
            object.__setattr__(self, "task_id", expected)
        elif self.task_id != expected:
            raise ValueError(f"task_id {self.task_id} does not match its content ({expected})")
        return self

    def definition(self) -> dict[str, Any]:
        """Return the fields that define the task (what its id hashes)."""
        data = self.model_dump(
            mode="json",
            include={"intent", "query", "gold", "voucher", "budget", "knowledge_attribute"},
        )
        # An absent reference product leaves the id exactly as it was before the field existed.
        for item in data["gold"]:
            if item.get("product") is None:
                item.pop("product", None)
        return data


def task_content_id(task: Task) -> str:
    """Compute a task's content address from its defining fields."""
    return content_hash(task.definition(), prefix="t-")


# --------------------------------------------------------------------------- chat messages


class FunctionCall(Frozen):
    """The function part of an OpenAI tool call; ``arguments`` is a JSON string as the model wrote it.

    ``parsed`` is that string read by :func:`arena.arguments.parse_arguments` (the tool server's
    own parser), decoded on first use and then kept with the call, so every reader (each check,
    curation) gets the same object or the same error and nobody decodes the JSON again.
    """

    name: str
    arguments: str

    @property
    def parsed(self) -> dict[str, Any] | ArgumentError:
        """The arguments as a JSON object, or why they are not one (decoded once per call)."""
        # Kept beside the raw text it was read from: ``model_copy(update=...)`` copies this cache
        # but may replace ``arguments``, so a cache for another string is read afresh. Not a
        # field: it never reaches the wire form, the hash or equality.
        cached: tuple[str, dict[str, Any] | ArgumentError] | None = self.__dict__.get(_PARSED)
        if cached is None or cached[0] is not self.arguments:
            cached = (self.arguments, parse_arguments(self.arguments))
            self.__dict__[_PARSED] = cached
        return cached[1]

    @property
    def parsed_or_empty(self) -> dict[str, Any]:
        """The arguments as a JSON object, ``{}`` when they are not one (for readers that only look)."""
        parsed = self.parsed
        return {} if isinstance(parsed, ArgumentError) else parsed


_PARSED = "_parsed_arguments"


class ToolCall(Frozen):
    """One tool call inside an assistant message (OpenAI chat format)."""

    id: str = Field(min_length=1)
    type: Literal["function"] = "function"
    function: FunctionCall


class Message(Frozen):
    """One chat message in OpenAI format, plus ``reasoning_content`` for thinking models."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: tuple[ToolCall, ...] | None = None
    tool_call_id: str | None = None
    name: str | None = None

    @model_validator(mode="after")
    def _fields_fit_role(self) -> Message:
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message needs tool_call_id")
        if self.role != "tool" and self.tool_call_id is not None:
            raise ValueError(f"a {self.role} message cannot carry tool_call_id")
        if self.role != "assistant" and (self.tool_calls or self.reasoning_content):
            raise ValueError(f"a {self.role} message cannot carry tool_calls or reasoning")
        return self


class Usage(Frozen):
    """Token usage the miner reports for an episode (informational; never trusted for scoring)."""

    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)


class Trajectory(Frozen):
    """A miner's returned episode, wire schema ``arena.trajectory/1``."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, populate_by_name=True)

    schema_id: Literal["arena.trajectory/1"] = Field(default=TRAJECTORY_SCHEMA, alias="schema")
    task_id: str
    episode_id: str
    miner_hotkey: str
    messages: tuple[Message, ...] = Field(min_length=1)
    usage: Usage | None = None

    def to_wire(self) -> dict[str, Any]:
        """Return the JSON-able wire form (with the ``schema`` key)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def tool_calls(self) -> list[ToolCall]:
        """Return every tool call, in order, across the assistant messages."""
        return [call for m in self.messages if m.role == "assistant" for call in m.tool_calls or ()]


# --------------------------------------------------------------------------- tools and their log


class ToolResult(Frozen):
    """What a tool returns to the agent: ``content`` goes verbatim into the tool message.

    ``error`` marks an agent fault (bad arguments, unknown id): still data for the agent.
    """

    content: str
    error: bool = False


ToolCallStatus = Literal["ok", "error"]
NonceStatus = Literal["none", "valid", "invalid"]


class ToolLogEntry(Sparse):
    """One tool call as the tool server executed and logged it (the ground truth of an episode)."""

    episode_id: str
    seq: int = Field(ge=0)
    call_id: str | None = None
    tool: str
    arguments: dict[str, Any]
    result: str
    result_hash: str
    status: ToolCallStatus
    started_at: datetime
    finished_at: datetime
    nonce_status: NonceStatus = "none"
    # The world version the result came from (``arena.world``: a world may change during an
    # episode); None over a static catalog, and then left out of the entry's dump, so the
    # content hashes of static episodes are what they were before the field existed.
    world_version: int | None = Field(default=None, ge=0)

    omitted_at_default = ("world_version",)
