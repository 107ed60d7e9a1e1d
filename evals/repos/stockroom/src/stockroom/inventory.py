"""The stock logic: adding items, moving stock in and out, and querying what is there."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timezone

from .errors import DuplicateItemError, InsufficientStockError, ItemNotFoundError
from .models import Item, validate_quantity, validate_sku


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class Movement:
    """A change of stock: ``delta`` units (negative when withdrawn) of one SKU."""

    sku: str
    delta: int
    reason: str
    at: datetime


class Inventory:
    """The items in stock, by SKU, and the movements that changed their quantities."""

    def __init__(self, items: Iterable[Item] = (), clock: Callable[[], datetime] = _utc_now) -> None:
        self._items: dict[str, Item] = {}
        self._movements: list[Movement] = []
        self._clock = clock
        for item in items:
            self.add_item(item, record=False)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, sku: object) -> bool:
        return isinstance(sku, str) and sku.strip().upper() in self._items

    def __iter__(self):
        return iter(self.items())

    def items(self) -> list[Item]:
        """All items, sorted by SKU."""
        return [self._items[sku] for sku in sorted(self._items)]

    @property
    def movements(self) -> list[Movement]:
        """The movements recorded since this inventory was created, oldest first."""
        return list(self._movements)

    def get(self, sku: str) -> Item:
        """The item with this SKU.

        Raises:
            ItemNotFoundError: There is none.

        """
        key = validate_sku(sku)
        try:
            return self._items[key]
        except KeyError:
            raise ItemNotFoundError(key) from None

    def add_item(self, item: Item, *, record: bool = True) -> Item:
        """Add a new item; its initial quantity is recorded as a movement unless ``record`` is False.

        Raises:
            DuplicateItemError: An item with the same SKU exists.

        """
        if item.sku in self._items:
            raise DuplicateItemError(item.sku)
        self._items[item.sku] = item
        if record and item.quantity:
            self._record(item.sku, item.quantity, "initial stock")
        return item

    def remove_item(self, sku: str) -> Item:
        """Remove an item and return it, whatever its quantity."""
        item = self.get(sku)
        del self._items[item.sku]
        return item

    def restock(self, sku: str, quantity: int, reason: str = "restock") -> Item:
        """Add ``quantity`` units (a positive number) to an item's stock."""
        validate_quantity(quantity, allow_zero=False)
        item = self.get(sku)
        item.quantity += quantity
        self._record(item.sku, quantity, reason)
        return item

    def withdraw(self, sku: str, quantity: int, reason: str = "withdrawal") -> Item:
        """Take ``quantity`` units (a positive number) out of an item's stock.

        Raises:
            InsufficientStockError: Fewer than ``quantity`` units are in stock; nothing changes.

        """
        validate_quantity(quantity, allow_zero=False)
        item = self.get(sku)
        if quantity > item.quantity:
            raise InsufficientStockError(item.sku, quantity, item.quantity)
        item.quantity -= quantity
        self._record(item.sku, -quantity, reason)
        return item

    def low_stock(self, threshold: int) -> list[Item]:
        """Items whose quantity is at or below ``threshold``, the emptiest first (then by SKU)."""
        low = [item for item in self._items.values() if item.quantity <= threshold]
        return sorted(low, key=lambda item: (item.quantity, item.sku))

    def total_value_cents(self) -> int:
        """What all the stock is worth, in cents."""
        return sum(item.value_cents for item in self._items.values())

    def by_location(self) -> dict[str, list[Item]]:
        """Items grouped by storage location, locations sorted, items sorted by SKU."""
        grouped: dict[str, list[Item]] = {}
        for item in self.items():
            grouped.setdefault(item.location, []).append(item)
        return {location: grouped[location] for location in sorted(grouped)}

    def restore_movements(self, movements: Iterable[Movement]) -> None:
        """Append movements recorded earlier (read back from storage) to the history."""
        self._movements.extend(movements)

    def _record(self, sku: str, delta: int, reason: str) -> None:
        self._movements.append(Movement(sku=sku, delta=delta, reason=reason, at=self._clock()))
