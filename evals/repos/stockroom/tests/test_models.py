import pytest

from stockroom.errors import ValidationError
from stockroom.models import Item, parse_price, validate_quantity, validate_sku


def test_validate_sku_normalizes_case_and_spaces():
    assert validate_sku("  tool-0001 ") == "TOOL-0001"


@pytest.mark.parametrize("sku", ["TOOL0001", "T-0001", "TOOLBOX-0001", "TOOL-01", ""])
def test_validate_sku_rejects_malformed(sku):
    with pytest.raises(ValidationError):
        validate_sku(sku)


def test_validate_quantity():
    assert validate_quantity(0) == 0
    assert validate_quantity(3, allow_zero=False) == 3
    with pytest.raises(ValidationError):
        validate_quantity(0, allow_zero=False)
    with pytest.raises(ValidationError):
        validate_quantity(-1)
    with pytest.raises(ValidationError):
        validate_quantity(True)


@pytest.mark.parametrize(("text", "cents"), [("14.90", 1490), ("3", 300), ("0.05", 5), (" 7.5 ", 750)])
def test_parse_price(text, cents):
    assert parse_price(text) == cents


@pytest.mark.parametrize("text", ["abc", "-1", "1.999"])
def test_parse_price_rejects_invalid(text):
    with pytest.raises(ValidationError):
        parse_price(text)


def test_item_defaults_and_value():
    item = Item("tool-0003", " Chisel ", quantity=4, unit_price_cents=1150)
    assert item.sku == "TOOL-0003"
    assert item.name == "Chisel"
    assert item.location == "MAIN"
    assert item.value_cents == 4600


def test_item_rejects_empty_name():
    with pytest.raises(ValidationError):
        Item("TOOL-0003", "   ")


def test_item_round_trips_through_dict():
    item = Item("TOOL-0003", "Chisel", quantity=4, unit_price_cents=1150, location="b2")
    assert Item.from_dict(item.to_dict()) == item
