from datetime import datetime, timezone

import pytest

from stockroom.inventory import Inventory
from stockroom.models import Item

FIXED_TIME = datetime(2024, 3, 1, 9, 30, tzinfo=timezone.utc)


@pytest.fixture
def inventory():
    return Inventory(
        [
            Item("TOOL-0001", "Claw hammer", quantity=12, unit_price_cents=1490, location="A1"),
            Item("TOOL-0002", "Tape measure 5 m", quantity=5, unit_price_cents=899, location="A1"),
            Item("FAST-0100", "Wood screws 4x40 (box)", quantity=2, unit_price_cents=650, location="B3"),
            Item("SAFE-0007", "Safety glasses", quantity=0, unit_price_cents=1200, location="C2"),
        ],
        clock=lambda: FIXED_TIME,
    )


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("STOCKROOM_HOME", raising=False)
    return tmp_path / "data"
