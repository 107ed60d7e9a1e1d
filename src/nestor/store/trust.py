"""Folders the user trusts: their project settings apply in full.

A repository is a stranger's input: until the user trusts its folder, nestor ignores whatever its
``nestor.toml`` and agent files say that would widen what nestor may do or change where data goes
(see :mod:`nestor.config`). Trust is the user's decision, stored in the user's data dir
(``trusted-folders.json``), keyed by the folder's resolved path; trusting a folder trusts the folders
inside it, as Claude Code's trust dialog does.

A file nestor cannot read as its own is never rewritten: reading it treats every folder as
untrusted (the safe side), and trusting a folder then fails with the file named.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nestor.core.errors import StoreError

TRUST_FILE_NAME = "trusted-folders.json"
_FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class TrustedFolder:
    """One trusted folder and when the user trusted it (ISO 8601, UTC)."""

    path: Path
    trusted_at: str


class TrustedFolders:
    """The user's trusted folders, read from and written to one JSON file in the data dir."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / TRUST_FILE_NAME

    def is_trusted(self, folder: Path) -> bool:
        """Whether ``folder`` or a folder containing it is trusted (False when the file is unreadable)."""
        try:
            entries = self._read()
        except StoreError:
            return False
        trusted = {entry.path for entry in entries}
        resolved = _resolved(folder)
        return any(candidate in trusted for candidate in (resolved, *resolved.parents))

    def folders(self) -> list[TrustedFolder]:
        """Every trusted folder, in the order they were trusted.

        Raises:
            StoreError: The file exists but is not a trust list nestor wrote.

        """
        return self._read()

    def trust(self, folder: Path) -> TrustedFolder:
        """Trust ``folder`` (resolved); trusting it again keeps the first date.

        Raises:
            StoreError: The file cannot be read as a trust list, or cannot be written.

        """
        entries = self._read()
        resolved = _resolved(folder)
        for entry in entries:
            if entry.path == resolved:
                return entry
        added = TrustedFolder(resolved, datetime.now(UTC).isoformat(timespec="seconds"))
        self._write([*entries, added])
        return added

    def revoke(self, folder: Path) -> bool:
        """Stop trusting ``folder`` itself; False when it was not in the list.

        Raises:
            StoreError: The file cannot be read as a trust list, or cannot be written.

        """
        entries = self._read()
        resolved = _resolved(folder)
        kept = [entry for entry in entries if entry.path != resolved]
        if len(kept) == len(entries):
            return False
        self._write(kept)
        return True

    def _read(self) -> list[TrustedFolder]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError) as exc:
            raise self._unreadable(str(getattr(exc, "strerror", None) or exc)) from None
        try:
            data: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            raise self._unreadable(f"invalid JSON at line {exc.lineno}") from None
        folders: Any = data.get("folders") if isinstance(data, dict) else None
        if not isinstance(folders, list):
            raise self._unreadable('expected an object with a "folders" list')
        entries: list[TrustedFolder] = []
        for item in folders:  # pyright: ignore[reportUnknownVariableType]
            if not (isinstance(item, dict) and isinstance(item.get("path"), str)):  # pyright: ignore[reportUnknownMemberType]
                raise self._unreadable('every folder needs a "path" string')
            entries.append(TrustedFolder(Path(item["path"]), str(item.get("trusted_at", ""))))  # pyright: ignore[reportUnknownArgumentType, reportUnknownMemberType]
        return entries

    def _write(self, entries: list[TrustedFolder]) -> None:
        document = {
            "version": _FORMAT_VERSION,
            "folders": [{"path": str(entry.path), "trusted_at": entry.trusted_at} for entry in entries],
        }
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Written aside and renamed over: a crash never leaves half a list.
            handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".trusted-", suffix=".json")
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                json.dump(document, file, indent=2)
                file.write("\n")
            os.replace(temporary, self.path)
        except OSError as exc:
            raise StoreError(
                f"{self.path}: cannot save the trusted folders: {exc.strerror}",
                hint="check the permissions of nestor's data dir (NESTOR_HOME)",
            ) from None

    def _unreadable(self, cause: str) -> StoreError:
        return StoreError(
            f"{self.path}: not a list of trusted folders ({cause})",
            hint="fix or delete the file; until then every folder is untrusted",
        )


def _resolved(folder: Path) -> Path:
    return folder.expanduser().resolve()
