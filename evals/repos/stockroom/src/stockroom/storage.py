"""Keeping the inventory in a JSON file.

The file holds ``{"version": 2, "items": [...], "movements": [...]}``. It is written to a
temporary file next to it and then renamed over it, so a crash never leaves half a file.
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from .errors import StockroomError
from .inventory import Inventory, Movement
from .models import Item

SCHEMA_VERSION = 2
"""The version of the file format that :class:`JsonStore` reads and writes."""


class JsonStore:
    """Loads and saves an :class:`Inventory` in one JSON file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def load(self) -> Inventory:
        """The inventory in the file; an empty one when the file does not exist yet.

        Raises:
            StockroomError: The file is not valid JSON or has another schema version.

        """
        if not self.path.exists():
            return Inventory()
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise StockroomError(f"{self.path} is not valid JSON: {exc}") from exc
        version = data.get("version")
        if version != SCHEMA_VERSION:
            raise StockroomError(f"{self.path} has schema version {version!r}, expected {SCHEMA_VERSION}")
        inventory = Inventory(Item.from_dict(raw) for raw in data.get("items", []))
        inventory.restore_movements(_movement(raw) for raw in data.get("movements", []))
        return inventory

    def save(self, inventory: Inventory) -> None:
        """Write ``inventory`` to the file atomically, creating its directory if needed."""
        data = {
            "version": SCHEMA_VERSION,
            "items": [item.to_dict() for item in inventory.items()],
            "movements": [
                {"sku": m.sku, "delta": m.delta, "reason": m.reason, "at": m.at.isoformat()}
                for m in inventory.movements
            ],
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp_name = tempfile.mkstemp(dir=self.path.parent, prefix=".inventory-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=2, sort_keys=True)
                handle.write("\n")
            os.replace(temp_name, self.path)
        except BaseException:
            Path(temp_name).unlink(missing_ok=True)
            raise


def _movement(raw: dict[str, Any]) -> Movement:
    return Movement(
        sku=raw["sku"], delta=int(raw["delta"]), reason=raw.get("reason", ""), at=datetime.fromisoformat(raw["at"])
    )
