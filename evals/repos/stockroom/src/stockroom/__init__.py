"""stockroom: a small command-line inventory tracker."""

from .errors import (
    ConfigError,
    DuplicateItemError,
    InsufficientStockError,
    ItemNotFoundError,
    StockroomError,
    ValidationError,
)
from .inventory import Inventory, Movement
from .models import Item

__version__ = "0.4.1"

__all__ = [
    "ConfigError",
    "DuplicateItemError",
    "InsufficientStockError",
    "Inventory",
    "Item",
    "ItemNotFoundError",
    "Movement",
    "StockroomError",
    "ValidationError",
    "__version__",
]
