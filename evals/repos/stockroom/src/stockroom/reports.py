"""Text and CSV output: stock tables, low-stock lists and the value of the stock."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable

from .models import Item

CURRENCY_SYMBOLS = {"EUR": "€", "USD": "$", "GBP": "£", "CHF": "CHF "}

TABLE_COLUMNS = ("SKU", "Name", "Qty", "Price", "Location")
CSV_HEADER = ("sku", "name", "quantity", "unit_price", "location")


def format_money(cents: int, currency: str = "EUR") -> str:
    """Format an amount in cents for display: ``format_money(123456, "USD") == "$1,234.56"``."""
    sign = "-" if cents < 0 else ""
    units, rest = divmod(abs(cents), 100)
    symbol = CURRENCY_SYMBOLS.get(currency, currency + " ")
    return f"{sign}{symbol}{units:,}.{rest:02d}"


def stock_table(items: Iterable[Item], currency: str = "EUR") -> str:
    """A plain-text table of ``items``, one line each, columns padded to their widest cell."""
    rows = [TABLE_COLUMNS] + [
        (item.sku, item.name, str(item.quantity), format_money(item.unit_price_cents, currency), item.location)
        for item in items
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(len(TABLE_COLUMNS))]
    lines = []
    for row in rows:
        cells = [
            cell.rjust(width) if column in (2, 3) else cell.ljust(width)
            for column, (cell, width) in enumerate(zip(row, widths))
        ]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def low_stock_report(items: list[Item], threshold: int) -> str:
    """The low-stock list as the ``low`` command prints it."""
    if not items:
        return f"No item at or below {threshold} units."
    lines = [f"{len(items)} item(s) at or below {threshold} units:"]
    lines += [f"  {item.sku}  {item.name}: {item.quantity} left ({item.location})" for item in items]
    return "\n".join(lines)


def to_csv(items: Iterable[Item]) -> str:
    """``items`` as CSV text with a header row; prices in units with two decimals."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    for item in items:
        units, rest = divmod(item.unit_price_cents, 100)
        writer.writerow((item.sku, item.name, item.quantity, f"{units}.{rest:02d}", item.location))
    return buffer.getvalue()
