"""The item record and the validation of its fields."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from .errors import ValidationError

SKU_PATTERN = re.compile(r"^[A-Z]{2,5}-\d{4}$")
"""A SKU is 2 to 5 capital letters, a dash and 4 digits: ``TOOL-0001``."""

DEFAULT_LOCATION = "MAIN"
MAX_NAME_LENGTH = 80


def validate_sku(sku: str) -> str:
    """Return ``sku`` upper-cased and stripped, or raise ValidationError if it is malformed."""
    normalized = sku.strip().upper()
    if not SKU_PATTERN.match(normalized):
        raise ValidationError(f"invalid SKU {sku!r}: expected letters, a dash and 4 digits (TOOL-0001)")
    return normalized


def validate_quantity(quantity: int, *, allow_zero: bool = True) -> int:
    """Return ``quantity`` if it is a valid number of units, else raise ValidationError."""
    if isinstance(quantity, bool) or not isinstance(quantity, int):
        raise ValidationError(f"quantity must be a whole number, not {quantity!r}")
    if quantity < 0 or (quantity == 0 and not allow_zero):
        raise ValidationError(f"quantity must be {'at least 0' if allow_zero else 'positive'}, not {quantity}")
    return quantity


def parse_price(text: str) -> int:
    """Parse a price such as ``"14.90"`` or ``"3"`` into cents (1490, 300).

    Raises:
        ValidationError: The text is not a non-negative amount with at most two decimals.

    """
    try:
        amount = Decimal(text.strip())
    except InvalidOperation:
        raise ValidationError(f"invalid price {text!r}") from None
    if amount < 0 or amount.as_tuple().exponent < -2:  # type: ignore[operator]
        raise ValidationError(f"invalid price {text!r}: expected a non-negative amount with at most 2 decimals")
    return int(amount * 100)


@dataclass
class Item:
    """One kind of article kept in stock."""

    sku: str
    name: str
    quantity: int = 0
    unit_price_cents: int = 0
    location: str = DEFAULT_LOCATION

    def __post_init__(self) -> None:
        self.sku = validate_sku(self.sku)
        self.name = self.name.strip()
        if not self.name or len(self.name) > MAX_NAME_LENGTH:
            raise ValidationError(f"an item name must have 1 to {MAX_NAME_LENGTH} characters")
        validate_quantity(self.quantity)
        if self.unit_price_cents < 0:
            raise ValidationError("a price cannot be negative")
        self.location = self.location.strip().upper() or DEFAULT_LOCATION

    @property
    def value_cents(self) -> int:
        """What the units in stock are worth, in cents."""
        return self.quantity * self.unit_price_cents

    def to_dict(self) -> dict[str, Any]:
        """The item as a JSON-ready dictionary."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Item:
        """Build an item from :meth:`to_dict` output; unknown keys are ignored."""
        return cls(
            sku=data["sku"],
            name=data["name"],
            quantity=int(data.get("quantity", 0)),
            unit_price_cents=int(data.get("unit_price_cents", 0)),
            location=data.get("location", DEFAULT_LOCATION),
        )
