import pytest

from stockroom.errors import DuplicateItemError, InsufficientStockError, ItemNotFoundError, ValidationError
from stockroom.models import Item


def test_items_are_sorted_by_sku(inventory):
    assert [item.sku for item in inventory.items()] == ["FAST-0100", "SAFE-0007", "TOOL-0001", "TOOL-0002"]


def test_get_is_case_insensitive(inventory):
    assert inventory.get("tool-0001").name == "Claw hammer"


def test_get_unknown_sku(inventory):
    with pytest.raises(ItemNotFoundError) as excinfo:
        inventory.get("TOOL-9999")
    assert excinfo.value.sku == "TOOL-9999"


def test_add_item_records_initial_stock(inventory):
    inventory.add_item(Item("TOOL-0003", "Chisel", quantity=4))
    assert "TOOL-0003" in inventory
    assert [(m.sku, m.delta, m.reason) for m in inventory.movements] == [("TOOL-0003", 4, "initial stock")]


def test_add_duplicate_item(inventory):
    with pytest.raises(DuplicateItemError):
        inventory.add_item(Item("TOOL-0001", "Another hammer"))


def test_remove_item(inventory):
    removed = inventory.remove_item("TOOL-0002")
    assert removed.name == "Tape measure 5 m"
    assert "TOOL-0002" not in inventory
    assert len(inventory) == 3


def test_restock(inventory):
    item = inventory.restock("SAFE-0007", 10, reason="order 1182")
    assert item.quantity == 10
    assert inventory.movements[-1].delta == 10
    assert inventory.movements[-1].reason == "order 1182"


def test_restock_rejects_zero(inventory):
    with pytest.raises(ValidationError):
        inventory.restock("SAFE-0007", 0)


def test_withdraw(inventory):
    item = inventory.withdraw("TOOL-0001", 3)
    assert item.quantity == 9
    assert inventory.movements[-1].delta == -3


def test_withdraw_everything(inventory):
    assert inventory.withdraw("FAST-0100", 2).quantity == 0


def test_withdraw_more_than_in_stock(inventory):
    with pytest.raises(InsufficientStockError) as excinfo:
        inventory.withdraw("FAST-0100", 3)
    assert (excinfo.value.requested, excinfo.value.available) == (3, 2)
    assert inventory.get("FAST-0100").quantity == 2
    assert inventory.movements == []


def test_low_stock_includes_threshold(inventory):
    assert [item.sku for item in inventory.low_stock(5)] == ["SAFE-0007", "FAST-0100", "TOOL-0002"]


def test_low_stock_zero_threshold(inventory):
    assert [item.sku for item in inventory.low_stock(0)] == ["SAFE-0007"]


def test_total_value(inventory):
    assert inventory.total_value_cents() == 12 * 1490 + 5 * 899 + 2 * 650


def test_by_location(inventory):
    grouped = inventory.by_location()
    assert list(grouped) == ["A1", "B3", "C2"]
    assert [item.sku for item in grouped["A1"]] == ["TOOL-0001", "TOOL-0002"]
