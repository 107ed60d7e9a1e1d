"""The ``stockroom`` command line.

Each subcommand loads the inventory, does one thing, saves the inventory if it changed, and
prints its result. Errors of the package (:class:`~stockroom.errors.StockroomError`) are printed
on stderr and give exit code 1; usage errors give 2, as argparse does.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from . import __version__
from .config import Settings, load_settings
from .errors import InsufficientStockError, StockroomError
from .inventory import Inventory
from .models import Item, parse_price
from .reports import format_money, low_stock_report, stock_table, to_csv
from .storage import JsonStore

EXIT_OK = 0
EXIT_ERROR = 1


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``stockroom`` command."""
    parser = argparse.ArgumentParser(prog="stockroom", description="A small command-line inventory tracker.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--data-dir", help="directory of inventory.json (default: $STOCKROOM_HOME or ~/.stockroom)")
    commands = parser.add_subparsers(dest="command", required=True)

    add = commands.add_parser("add", help="add a new item")
    add.add_argument("sku")
    add.add_argument("name")
    add.add_argument("--quantity", type=int, default=0)
    add.add_argument("--price", default="0", help="unit price, e.g. 14.90")
    add.add_argument("--location", default="MAIN")

    listing = commands.add_parser("list", help="list the items in stock")
    listing.add_argument("--location", help="only the items at this location")

    for name, help_text in (("restock", "add units to an item"), ("withdraw", "take units out of stock")):
        command = commands.add_parser(name, help=help_text)
        command.add_argument("sku")
        command.add_argument("quantity", type=int)
        command.add_argument("--reason", default=name)

    low = commands.add_parser("low", help="items at or below the low-stock threshold")
    low.add_argument("--threshold", type=int, help="overrides low_stock_threshold from stockroom.ini")

    commands.add_parser("value", help="the total value of the stock")

    export = commands.add_parser("export", help="write the items to a CSV file")
    export.add_argument("path", type=Path)
    return parser


def run(args: argparse.Namespace, settings: Settings, inventory: Inventory) -> tuple[str, bool]:
    """Carry out one parsed command; returns what to print and whether the inventory changed."""
    if args.command == "add":
        item = Item(
            sku=args.sku,
            name=args.name,
            quantity=args.quantity,
            unit_price_cents=parse_price(args.price),
            location=args.location,
        )
        inventory.add_item(item)
        return f"Added {item.sku} ({item.name}), {item.quantity} in stock.", True
    if args.command == "list":
        items = inventory.items()
        if args.location:
            items = [item for item in items if item.location == args.location.upper()]
        return stock_table(items, settings.currency), False
    if args.command == "restock":
        item = inventory.restock(args.sku, args.quantity, args.reason)
        return f"{item.sku}: {item.quantity} in stock.", True
    if args.command == "withdraw":
        try:
            item = inventory.withdraw(args.sku, args.quantity, args.reason)
        except InsufficientStockError as exc:
            raise StockroomError(f"{exc}; restock it first or withdraw at most {exc.available}") from exc
        return f"{item.sku}: {item.quantity} left.", True
    if args.command == "low":
        threshold = settings.low_stock_threshold if args.threshold is None else args.threshold
        return low_stock_report(inventory.low_stock(threshold), threshold), False
    if args.command == "value":
        total = format_money(inventory.total_value_cents(), settings.currency)
        return f"{len(inventory)} item(s) worth {total}.", False
    if args.command == "export":
        args.path.write_text(to_csv(inventory.items()), encoding="utf-8")
        return f"Wrote {len(inventory)} item(s) to {args.path}.", False
    raise AssertionError(f"unhandled command {args.command!r}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings(args.data_dir)
        store = JsonStore(settings.data_file)
        inventory = store.load()
        output, changed = run(args, settings, inventory)
        if changed:
            store.save(inventory)
    except StockroomError as exc:
        print(f"stockroom: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print(output)
    return EXIT_OK
