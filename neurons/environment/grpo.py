"""TRL's ``GRPOTrainer(environment_factory=...)`` over the environment, and a world pack's prompt dataset.

TRL (>= 1.x) builds one environment instance per rollout from a factory, calls
``reset(**row)`` with the dataset row, renders the instance's public methods as the tools of
the prompt, calls them with the arguments the model wrote, and asks ``get_reward()`` for the
rollout's one scalar. Here the instance is a session of a shared
:class:`~neurons.environment.session.Environment`: ``reset`` opens it on the row's ``task_id``,
each tool method is one ``step`` (its return value is the tool message, verbatim from the
log), and ``get_reward`` finishes the episode and returns its return: the validator's score
less the turn penalties (``neurons.environment.rewards``; the score alone when turn rewards are
off). The methods mirror the tool set's schemas one for one (the tests compare them with
``arena.tools.tool_schemas``); one class per tool set, so a model is offered exactly the tools
a miner is.

Usage (``docs/environment.md`` has the GPU recipe with vLLM)::

    env = Environment(pack_tasks(pack_dir, open_index(index_dir)))
    trainer = GRPOTrainer(model=..., args=GRPOConfig(loss_type="dr_grpo", ...),
                          train_dataset=prompt_dataset(env.tasks), environment_factory=factory(env))
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from neurons.environment.session import Environment
from neurons.environment.tasks import EnvTasks
from neurons.environment.types import Action


class ShoppingTools:
    """The ``sb-1`` tools (ShoppingBench's four) as methods of one environment session."""

    def __init__(self, env: Environment) -> None:
        """Bind to the shared environment (TRL builds one instance per concurrent rollout)."""
        self._env = env
        self._session: str | None = None
        self._return: float | None = None

    def reset(self, task_id: str, **row: Any) -> None:
        """Open a session on the row's task (the prompt already holds its request: nothing to append)."""
        del row
        if self._session is not None:
            self._env.close(self._session)
        self._session = self._env.reset(task_id=task_id).session_id
        self._return = None

    def get_reward(self) -> float:
        """Finish the episode (if the model did not terminate it) and return its return."""
        if self._session is None:
            return 0.0
        if self._return is None:
            self._return = self._env.finish(self._session).total_reward
        return self._return

    def _call(self, tool: str, **arguments: Any) -> str:
        """One step; the result text goes back to the model (a tool error included)."""
        if self._session is None:
            return json.dumps({"error": "no task: the environment was not reset"})
        given = {name: value for name, value in arguments.items() if value is not None}
        outcome = self._env.step(self._session, Action(tool=tool, arguments=given))
        if outcome.final is not None:
            self._return = outcome.final.total_reward
        return outcome.result

    def find_product(
        self,
        q: str,
        page: int,
        shop_id: str | None = None,
        price: str | None = None,
        sort: str | None = None,
        service: str | None = None,
    ) -> str:
        """Search the catalog by keywords: up to 10 products a page (id, shop, title, price, services, sales).

        Args:
            q: Keywords describing the product, e.g. "wireless earbuds".
            page: Page of results, 1 to 5; each page holds 10 products.
            shop_id: Only return products sold by the shop with this shop_id.
            price: Price range "low-high"; either bound may be left out, e.g. "100-500", "-300".
            sort: Order of the kept matches (choices: ["priceasc", "pricedesc", "order", "default"])
            service: Comma-separated services every result must offer: official, freeShipping, COD, flashsale.
        """
        return self._call(
            "find_product", q=q, page=page, shop_id=shop_id, price=price, sort=sort, service=service
        )

    def view_product_information(self, product_ids: str) -> str:
        """Fetch details of products by product_id: descriptions, SKU options and attributes.

        Args:
            product_ids: Comma-separated product_ids, e.g. "1001,1002" (at most 20).
        """
        return self._call("view_product_information", product_ids=product_ids)

    def recommend_product(self, product_ids: str) -> str:
        """Give the user your final answer: one product_id per requested item, in the order they asked.

        Args:
            product_ids: Comma-separated product_ids, one per requested item, e.g. "1001,2002".
        """
        return self._call("recommend_product", product_ids=product_ids)

    def terminate(self, status: str) -> str:
        """End the conversation and report whether the task was completed.

        Args:
            status: success if the task was done, else failure (choices: ["success", "failure"])
        """
        return self._call("terminate", status=status)


class VoucherTools(ShoppingTools):
    """The ``arena-2`` tools: ``sb-1``'s, one shop's products, and a voucher's price of a basket."""

    def find_products_in_same_shop(self, shop_id: str, q: str | None = None, page: int | None = None) -> str:
        """List the products of one shop, 10 per page, best-selling first; with q, search within the shop.

        Args:
            shop_id: The shop_id whose products to list.
            q: Optional keywords to search within the shop.
            page: Page of results, 1 to 5.
        """
        return self._call("find_products_in_same_shop", shop_id=shop_id, q=q, page=page)

    def calculate_voucher(
        self,
        product_ids: str,
        voucher_type: str,
        threshold: float,
        discount_type: str,
        face_value: float | None = None,
        discount: float | None = None,
        cap: float | None = None,
    ) -> str:
        """Price a basket (one unit of each product) and apply a voucher: totals before and after it.

        Args:
            product_ids: Comma-separated product_ids in the basket, e.g. "1001,2002".
            voucher_type: platform (any products) or shop (one shop only) (choices: ["platform", "shop"])
            threshold: The basket total must reach this amount for the voucher.
            discount_type: fixed (face_value off) or percentage (choices: ["fixed", "percentage"])
            face_value: Amount off (fixed vouchers).
            discount: Fraction off, e.g. 0.1 for 10% (percentage vouchers).
            cap: Largest amount off (percentage vouchers).
        """
        return self._call(
            "calculate_voucher",
            product_ids=product_ids,
            voucher_type=voucher_type,
            threshold=threshold,
            discount_type=discount_type,
            face_value=face_value,
            discount=discount,
            cap=cap,
        )


class ShopperTools(VoucherTools):
    """The ``arena-3`` tools: ``arena-2``'s and a question to the customer (the world's shopper)."""

    def ask_user(self, question: str) -> str:
        """Ask the customer one short question about a need the request leaves out (a service, brand, size).

        Args:
            question: One question to the customer, at most 300 characters.
        """
        return self._call("ask_user", question=question)


TOOL_CLASSES: dict[str, type[ShoppingTools]] = {
    "sb-1": ShoppingTools,
    "arena-2": VoucherTools,
    "arena-3": ShopperTools,
}


def factory(env: Environment) -> Callable[[], ShoppingTools]:
    """TRL's ``environment_factory``: one session's tools, of the environment's tool set, per call."""
    return functools.partial(TOOL_CLASSES[env.tasks.toolset], env)


def prompt_rows(tasks: EnvTasks, *, system: str | None = None) -> list[dict[str, Any]]:
    """One GRPO prompt per task: the system prompt (if any) and the request; ``task_id`` reaches ``reset``."""
    head = [{"role": "system", "content": system}] if system is not None else []
    return [
        {"prompt": [*head, {"role": "user", "content": task.query}], "task_id": task.task_id}
        for task in tasks.tasks
    ]


def prompt_dataset(tasks: EnvTasks, *, system: str | None = None) -> Any:
    """:func:`prompt_rows` as a ``datasets.Dataset`` (what ``GRPOTrainer`` takes as ``train_dataset``)."""
    from datasets import Dataset

    return Dataset.from_list(prompt_rows(tasks, system=system))
