"""The search index's read vocabulary: hits, fast fields, and the ``ProductIndex`` protocol the tools read.

``arena.index.SearchIndex`` satisfies ``ProductIndex``; so does a world over one
(``arena.world.WorldOverlay``), which is how a world reaches every tool without a rebuild.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from arena.types import Product, Service

# The fast fields a filter reads (the ``FastFields`` attribute names).
FieldName = Literal["prices", "sold_counts", "services", "shops"]


@dataclass(frozen=True)
class Hit:
    """One search hit with the summary fields ``find_product`` returns and its BM25 score."""

    product_id: str
    shop_id: str
    title: str
    price: float
    service: tuple[Service, ...]
    sold_count: int
    score: float
    # The stock level a world declares for the product (``arena.world``); None: no stock record.
    stock: int | None = None


@dataclass(frozen=True)
class FastFields:
    """Per-product arrays indexed by ordinal, for filtering hits without fetching documents."""

    prices: npt.NDArray[np.float64]
    sold_counts: npt.NDArray[np.int64]
    services: npt.NDArray[np.uint8]  # bit i set: SERVICES[i] offered
    shops: npt.NDArray[np.int32]  # shop code, see SearchIndex.shop_code


class ProductIndex(Protocol):
    """What the tools and ``arena.search`` read: a ``SearchIndex``, or a world over one (``arena.world``)."""

    @property
    def catalog_version(self) -> str:
        """The catalog version of the base index."""
        ...

    def __len__(self) -> int:
        """Number of ordinals (products, including any a world delists)."""
        ...

    def product(self, product_id: str) -> Product | None:
        """The product with this id, or None."""
        ...

    def products(self, product_ids: Sequence[str]) -> dict[str, Product]:
        """The known products among ``product_ids`` by id."""
        ...

    def stock_levels(self, product_ids: Sequence[str]) -> dict[str, int]:
        """Declared stock levels of these products (absent: no stock record, the catalog default)."""
        ...

    def product_id_at(self, ordinal: int) -> str:
        """The id at a stable ordinal in ``0..len-1``."""
        ...

    def shop_product_ids(self, shop_id: str) -> list[str]:
        """Ids of a shop's products."""
        ...

    def shops_with_at_least(self, n: int) -> list[str]:
        """Sorted ids of the shops with at least ``n`` products."""
        ...

    def shop_code(self, shop_id: str) -> int | None:
        """The code of a shop in the ``shops`` field, or None for an unknown shop."""
        ...

    def match(self, query: str) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float32]]:
        """Every matching ordinal with its BM25 score, unordered."""
        ...

    def field_values(self, name: FieldName, ordinals: npt.NDArray[np.uint32]) -> npt.NDArray[Any]:
        """One fast field's values at ``ordinals``."""
        ...

    def rank_keys(
        self, ordinals: npt.NDArray[np.uint32], scores: npt.NDArray[np.float32]
    ) -> npt.NDArray[np.int64]:
        """Sort keys (ascending = better) of matches."""
        ...

    def hits_at(self, ordinals: npt.NDArray[np.uint32], scores: npt.NDArray[np.float32]) -> list[Hit]:
        """Materialise hits for ordinals."""
        ...


@runtime_checkable
class VersionedIndex(Protocol):
    """A ``ProductIndex`` whose world changes during an episode (``arena.world.WorldOverlay``).

    The tool log asks it which version each call sees and answers the call at that version.
    """

    def version_after(self, calls: int) -> int:
        """The version a call sees after ``calls`` earlier calls of its episode."""
        ...

    def at_version(self, version: int) -> ProductIndex:
        """The index as it is at ``version``."""
        ...
