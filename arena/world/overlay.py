"""``WorldOverlay``: a world's delta applied over a base ``SearchIndex`` at read time, never rebuilt.

The overlay is a ``ProductIndex`` (``arena.index_types``), so ``find_product`` and every other
tool take it in place of the index with the search semantics unchanged:

- delisted products drop out of every match, lookup and shop listing;
- moved prices replace the base price in the fast field the price filter and sort read, in hits
  and in product records (so ``calculate_voucher`` prices the world);
- new listings get ordinals after the base's, postings in a side index (``ListingIndex``) scored
  with the base's BM25 statistics, and id ranks interleaved with the base's, so Anserini's tie
  order (rounded score, then product id) is kept across both;
- declared stock levels show as a ``stock`` field in ``find_product``,
  ``find_products_in_same_shop`` and ``view_product_information`` rows;
- changes during an episode (``WorldDelta.changes``) are versions of the world: ``at_version(v)``
  is the overlay with the first ``v`` applied (made once, then shared), and ``version_after(n)``
  the version a call sees after ``n`` earlier calls, so the tool server answers each call of an
  episode at its own version and logs which (``ToolLogEntry.world_version``).

An empty delta answers every call exactly as the base does. Memory is bounded by the delta:
base arrays are gathered at the matched ordinals only, never copied whole.
"""

from __future__ import annotations

import copy
import dataclasses
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from arena import bm25
from arena.errors import WorldError
from arena.index import SearchIndex
from arena.index_types import FieldName, Hit
from arena.indexer import service_mask
from arena.types import Product
from arena.world.listings import ListingIndex
from arena.world.types import WorldChange, WorldDelta

# Codes for shops that only new listings have, above any base shop code.
_NEW_SHOP_CODES = 1 << 30


class WorldOverlay:
    """A read-only world over a base index (see the module docstring); thread-safe as the base is."""

    def __init__(self, base: SearchIndex, delta: WorldDelta) -> None:
        """Apply ``delta`` over ``base``.

        Raises:
            WorldError: a new listing reuses a base product id.
        """
        self.base, self.delta = base, delta
        self._count = len(base)
        self._empty = delta.is_empty()
        self._new = [listing.product for listing in delta.new_listings]
        self._new_at = {p.product_id: i for i, p in enumerate(self._new)}
        self._delisted = frozenset(delta.delisted)
        self._prices = {m.product_id: m.new_price for m in delta.price_moves}
        self._stock = {s.product_id: s.stock for s in delta.stock if s.product_id not in self._delisted}
        changed = [c.product_id for c in delta.changes]
        ordinals = base.ordinals_of([*delta.delisted, *self._prices, *self._stock, *self._new_at, *changed])
        clashing = sorted(i for i in self._new_at if i in ordinals)
        if clashing:
            raise WorldError(f"new listing ids already in the base catalog: {', '.join(clashing[:5])}")
        self._ordinals = ordinals
        self._declare(delta)
        self._delisted_ordinals = np.array(
            sorted(ordinals[i] for i in delta.delisted if i in ordinals), np.uint32
        )
        self._moved = _patch(ordinals, self._prices, np.float64)
        self._stocked = _patch(ordinals, self._stock, np.int64)
        self._shop_codes: dict[str, int] = {}
        self._new_fields = self._listing_fields()
        self._listings = ListingIndex(base, self._new, self._count)
        # Where each new id sorts among the base ids: the base rank just below it.
        order = sorted(range(len(self._new)), key=lambda i: self._new[i].product_id)
        below = np.array([base.id_rank_before(self._new[i].product_id) for i in order], dtype=np.int64)
        self._below_sorted = below
        self._new_ranks = np.empty(len(self._new), dtype=np.int64)
        self._new_ranks[order] = below + 1 + np.arange(len(order), dtype=np.int64)
        self._shops_touched = self._touched_shops()

    # ----------------------------------------------------------------------- world versions

    def version_after(self, calls: int) -> int:
        """The world version a call sees after ``calls`` earlier calls of its episode (its ``seq``)."""
        return self.delta.version_at(calls)

    def at_version(self, version: int) -> WorldOverlay:
        """This world with its first ``version`` changes applied (built once per version, then shared).

        Raises:
            WorldError: no such version.
        """
        root = self._root
        if not 0 <= version <= len(root.delta.changes):
            raise WorldError(f"world version {version} out of range 0..{len(root.delta.changes)}")
        with root._versions_lock:
            found = root._versions.get(version)
            if found is None:
                found = root._versions[version] = root._changed(root.delta.changes[:version], version)
        return found

    def with_changes(self, changes: Sequence[WorldChange]) -> WorldOverlay:
        """This world at version 0 with ``changes`` declared instead (sharing everything built).

        Raises:
            WorldError: a change names a product this world lacks, or the changes are out of order.
        """
        root = self._root
        try:
            delta = WorldDelta.model_validate({**dict(root.delta), "changes": tuple(changes)})
        except ValueError as exc:
            raise WorldError(f"world changes refused: {exc}") from exc
        view = copy.copy(root)
        missing = [c.product_id for c in changes if c.product_id not in root._ordinals]
        view._ordinals = {**root._ordinals, **root.base.ordinals_of(missing)} if missing else root._ordinals
        view._declare(delta)
        return view

    def _declare(self, delta: WorldDelta) -> None:
        """Make this overlay version 0 of ``delta`` (its changes checked, no version built yet)."""
        unknown = sorted(
            {c.product_id for c in delta.changes if c.product_id not in self._ordinals} - set(self._new_at)
        )
        if unknown:
            raise WorldError(f"world changes name products this world lacks: {', '.join(unknown[:5])}")
        self.delta, self.version, self._root = delta, 0, self
        self._versions: dict[int, WorldOverlay] = {0: self}
        self._versions_lock = threading.Lock()

    def _changed(self, changes: Sequence[WorldChange], version: int) -> WorldOverlay:
        """A view of this (version 0) overlay with ``changes`` applied: prices and stock only."""
        view = copy.copy(self)
        view.version, view._empty = version, False
        view._prices, view._stock, view._new = dict(self._prices), dict(self._stock), list(self._new)
        new_prices = self._new_fields["prices"].copy()
        for change in changes:
            if change.product_id in self._delisted:
                continue
            if change.price is not None and change.product_id in self._new_at:
                position = self._new_at[change.product_id]
                view._new[position] = view._new[position].model_copy(update={"price": change.price})
                new_prices[position] = change.price
            elif change.price is not None:
                view._prices[change.product_id] = change.price
            if change.stock is not None:
                view._stock[change.product_id] = change.stock
        view._new_fields = {**self._new_fields, "prices": new_prices}
        view._moved = _patch(self._ordinals, view._prices, np.float64)
        view._stocked = _patch(self._ordinals, view._stock, np.int64)
        return view

    # ----------------------------------------------------------------------- ProductIndex

    @property
    def catalog_version(self) -> str:
        """The base catalog's version (a world is identified by its pack hash, not here)."""
        return self.base.catalog_version

    def __len__(self) -> int:
        return self._count + len(self._new)

    def product(self, product_id: str) -> Product | None:
        """The product as this world has it (None when delisted or unknown)."""
        return self.products([product_id]).get(product_id)

    def products(self, product_ids: Sequence[str]) -> dict[str, Product]:
        """The world's products among ``product_ids`` by id (delisted and unknown ids are absent)."""
        wanted = [i for i in dict.fromkeys(product_ids) if i not in self._delisted]
        found: dict[str, Product] = {}
        base_ids = [i for i in wanted if i not in self._new_at]
        base = self.base.products(base_ids) if base_ids else {}
        for product_id in wanted:
            if product_id in self._new_at:
                found[product_id] = self._new[self._new_at[product_id]]
            elif product_id in base:
                product = base[product_id]
                if product_id in self._prices:
                    product = product.model_copy(update={"price": self._prices[product_id]})
                found[product_id] = product
        return found

    def stock_levels(self, product_ids: Sequence[str]) -> dict[str, int]:
        """The declared stock levels among ``product_ids`` (absent: no record, available)."""
        return {i: self._stock[i] for i in product_ids if i in self._stock}

    def product_id_at(self, ordinal: int) -> str:
        """The id at an ordinal: the base's, then the new listings' (a delisted id still has its ordinal)."""
        if ordinal >= self._count:
            position = ordinal - self._count
            if position >= len(self._new):
                raise IndexError(f"product ordinal {ordinal} out of range 0..{len(self) - 1}")
            return self._new[position].product_id
        return self.base.product_id_at(ordinal)

    def shop_product_ids(self, shop_id: str) -> list[str]:
        """A shop's products in this world: the base's less the delisted, then its new listings."""
        ids = self.base.shop_product_ids(shop_id)
        if self._empty:
            return ids
        return [i for i in ids if i not in self._delisted] + [
            p.product_id for p in self._new if p.shop_id == shop_id
        ]

    def shops_with_at_least(self, n: int) -> list[str]:
        """Sorted ids of the shops with at least ``n`` products in this world."""
        shops = self.base.shops_with_at_least(n)
        if self._empty:
            return shops
        kept = {s for s in shops if s not in self._shops_touched}
        kept |= {s for s in self._shops_touched if len(self.shop_product_ids(s)) >= n}
        return sorted(kept)

    def shop_code(self, shop_id: str) -> int | None:
        """The shop's code in the ``shops`` field (new-only shops get codes above the base's)."""
        code = self.base.shop_code(shop_id)
        return code if code is not None else self._shop_codes.get(shop_id)

    def match(self, query: str) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float32]]:
        """The base's matches less the delisted, then the new listings' matches."""
        ordinals, scores = self.base.match(query)
        if self._empty:
            return ordinals, scores
        if len(self._delisted_ordinals) and len(ordinals):
            keep = ~np.isin(ordinals, self._delisted_ordinals)
            ordinals, scores = ordinals[keep], scores[keep]
        new_ordinals, new_scores = self._listings.match(query)
        if not len(new_ordinals):
            return ordinals, scores
        return np.concatenate([ordinals, new_ordinals]), np.concatenate([scores, new_scores])

    def field_values(self, name: FieldName, ordinals: npt.NDArray[np.uint32]) -> npt.NDArray[Any]:
        """One fast field at ``ordinals``: the base's, with moved prices patched, then the new listings'."""
        if self._empty:
            return self.base.field_values(name, ordinals)
        is_new = ordinals >= self._count
        base_values = self.base.field_values(name, ordinals[~is_new])
        values = np.empty(len(ordinals), dtype=base_values.dtype)
        values[~is_new] = base_values
        values[is_new] = self._new_fields[name][ordinals[is_new] - self._count]
        if name == "prices":
            _apply(values, ordinals, *self._moved)
        return values

    def rank_keys(
        self, ordinals: npt.NDArray[np.uint32], scores: npt.NDArray[np.float32]
    ) -> npt.NDArray[np.int64]:
        """Anserini's sort keys with id ranks over base and new ids together."""
        if not self._new:
            return self.base.rank_keys(ordinals, scores)
        is_new = ordinals >= self._count
        ranks = np.empty(len(ordinals), dtype=np.int64)
        base_ranks = self.base.id_ranks_at(ordinals[~is_new]).astype(np.int64)
        # A base id moves up by the number of new ids that sort below it.
        ranks[~is_new] = base_ranks + np.searchsorted(self._below_sorted, base_ranks, side="left")
        ranks[is_new] = self._new_ranks[ordinals[is_new] - self._count]
        return bm25.rank_keys(scores, ranks.astype(np.uint32))

    def hits_at(self, ordinals: npt.NDArray[np.uint32], scores: npt.NDArray[np.float32]) -> list[Hit]:
        """Hits in the given order, base summaries patched with world prices and stock."""
        if self._empty:
            return self.base.hits_at(ordinals, scores)
        is_new = ordinals >= self._count
        base_hits = iter(self.base.hits_at(ordinals[~is_new], scores[~is_new]))
        hits: list[Hit] = []
        for ordinal, score, new in zip(ordinals.tolist(), scores.tolist(), is_new.tolist(), strict=True):
            if new:
                product = self._new[ordinal - self._count]
                hits.append(_hit(product, float(score), self._stock.get(product.product_id)))
                continue
            hit = next(base_hits)
            price = self._prices.get(hit.product_id, hit.price)
            hits.append(dataclasses.replace(hit, price=price, stock=self._stock.get(hit.product_id)))
        return hits

    # ----------------------------------------------------------------------- construction

    def _listing_fields(self) -> dict[FieldName, npt.NDArray[Any]]:
        codes = []
        for product in self._new:
            code = self.base.shop_code(product.shop_id)
            if code is None:
                code = self._shop_codes.setdefault(product.shop_id, _NEW_SHOP_CODES + len(self._shop_codes))
            codes.append(code)
        return {
            "prices": np.array([p.price for p in self._new], dtype=np.float64),
            "sold_counts": np.array([p.sold_count for p in self._new], dtype=np.int64),
            "services": np.array([service_mask(p.service) for p in self._new], dtype=np.uint8),
            "shops": np.array(codes, dtype=np.int32),
        }

    def _touched_shops(self) -> frozenset[str]:
        delisted = self.base.products(sorted(self._delisted)) if self._delisted else {}
        return frozenset({p.shop_id for p in delisted.values()} | {p.shop_id for p in self._new})


def _patch(
    ordinals: dict[str, int], values: dict[str, Any], dtype: type[np.generic]
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[Any]]:
    """Sorted base ordinals of the patched ids and their values, for a vectorised lookup."""
    pairs = sorted((ordinals[i], v) for i, v in values.items() if i in ordinals)
    return np.array([o for o, _ in pairs], dtype=np.uint32), np.array([v for _, v in pairs], dtype=dtype)


def _apply(
    values: npt.NDArray[Any],
    ordinals: npt.NDArray[np.uint32],
    at: npt.NDArray[np.uint32],
    new: npt.NDArray[Any],
) -> None:
    if not len(at) or not len(ordinals):
        return
    positions = np.minimum(np.searchsorted(at, ordinals), len(at) - 1)
    hit = at[positions] == ordinals
    values[hit] = new[positions[hit]]


def _hit(product: Product, score: float, stock: int | None) -> Hit:
    return Hit(
        product_id=product.product_id,
        shop_id=product.shop_id,
        title=product.title,
        price=product.price,
        service=product.service,
        sold_count=product.sold_count,
        score=score,
        stock=stock,
    )
