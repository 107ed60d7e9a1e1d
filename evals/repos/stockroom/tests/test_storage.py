import json

import pytest

from stockroom.errors import StockroomError
from stockroom.storage import SCHEMA_VERSION, JsonStore


def test_load_missing_file_gives_empty_inventory(tmp_path):
    assert len(JsonStore(tmp_path / "inventory.json").load()) == 0


def test_save_and_load_round_trip(tmp_path, inventory):
    inventory.withdraw("TOOL-0001", 2, reason="bench 2")
    store = JsonStore(tmp_path / "nested" / "inventory.json")
    store.save(inventory)

    loaded = store.load()
    assert [item.to_dict() for item in loaded.items()] == [item.to_dict() for item in inventory.items()]
    assert loaded.movements == inventory.movements


def test_save_writes_schema_version_and_leaves_no_temp_file(tmp_path, inventory):
    path = tmp_path / "inventory.json"
    JsonStore(path).save(inventory)
    assert json.loads(path.read_text(encoding="utf-8"))["version"] == SCHEMA_VERSION
    assert [p.name for p in tmp_path.iterdir()] == ["inventory.json"]


def test_load_rejects_other_schema_version(tmp_path):
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps({"version": 1, "items": []}), encoding="utf-8")
    with pytest.raises(StockroomError, match="schema version 1"):
        JsonStore(path).load()


def test_load_rejects_invalid_json(tmp_path):
    path = tmp_path / "inventory.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(StockroomError, match="not valid JSON"):
        JsonStore(path).load()
