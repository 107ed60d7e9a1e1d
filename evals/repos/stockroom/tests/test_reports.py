from stockroom.models import Item
from stockroom.reports import format_money, low_stock_report, stock_table, to_csv


def test_format_money():
    assert format_money(123456, "USD") == "$1,234.56"
    assert format_money(0) == "€0.00"
    assert format_money(-250, "GBP") == "-£2.50"


def test_format_money_pads_cents():
    assert format_money(1005, "EUR") == "€10.05"


def test_format_money_unknown_currency_uses_code():
    assert format_money(100, "SEK") == "SEK 1.00"


def test_stock_table_aligns_columns(inventory):
    lines = stock_table(inventory.items()).splitlines()
    assert lines[0].split() == ["SKU", "Name", "Qty", "Price", "Location"]
    assert len(lines) == 5
    assert lines[1].index("Wood screws") == lines[0].index("Name")
    assert lines[1].endswith("B3")


def test_low_stock_report():
    items = [Item("FAST-0100", "Wood screws", quantity=2, location="B3")]
    assert low_stock_report(items, 5) == "1 item(s) at or below 5 units:\n  FAST-0100  Wood screws: 2 left (B3)"
    assert low_stock_report([], 5) == "No item at or below 5 units."


def test_to_csv(inventory):
    lines = to_csv(inventory.items()).splitlines()
    assert lines[0] == "sku,name,quantity,unit_price,location"
    assert lines[1] == "FAST-0100,Wood screws 4x40 (box),2,6.50,B3"
    assert len(lines) == 5
