"""Exceptions raised by stockroom.

Every error the package raises on purpose derives from :class:`StockroomError`, so the command
line can report them all the same way.
"""


class StockroomError(Exception):
    """Base class of all stockroom errors."""


class ConfigError(StockroomError):
    """The settings file is malformed or holds an invalid value."""


class ValidationError(StockroomError):
    """A value given by the user is not acceptable (a SKU, a quantity, a price)."""


class ItemNotFoundError(StockroomError):
    """No item with the given SKU exists."""

    def __init__(self, sku: str) -> None:
        super().__init__(f"no item with SKU {sku!r}")
        self.sku = sku


class DuplicateItemError(StockroomError):
    """An item with the given SKU already exists."""

    def __init__(self, sku: str) -> None:
        super().__init__(f"an item with SKU {sku!r} already exists")
        self.sku = sku


class InsufficientStockError(StockroomError):
    """A withdrawal asks for more units than are in stock."""

    def __init__(self, sku: str, requested: int, available: int) -> None:
        super().__init__(f"cannot withdraw {requested} of {sku}: only {available} in stock")
        self.sku = sku
        self.requested = requested
        self.available = available
