"""The files a change touched, as they were before it: kept byte for byte, and put back exactly.

Before the harness first changes a file it keeps the file's bytes (or that there was no file, and
which of its folders did not exist). A change that does not pass verification is then undone by
writing those bytes back, deleting the files it created and the folders made for them: the tree is
as it was, whatever the steps did in between (an undo edit that failed, a new test module left
behind). Nothing here runs git or any other program.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, slots=True)
class _Before:
    """One file before the change: its bytes and mode, or None when it did not exist."""

    data: bytes | None
    mode: int | None
    new_folders: tuple[Path, ...] = ()


@dataclass(slots=True)
class Snapshot:
    """The files the harness changed in one turn, as they were before its first change of each.

    Attributes:
        root: The project's root (resolved); paths are relative to it.

    """

    root: Path
    _before: dict[str, _Before] = field(default_factory=dict[str, _Before])

    def keep(self, path: str) -> None:
        """Keep ``path`` as it is now, unless it was kept already (the first state is the one)."""
        if path in self._before:
            return
        target = self._path(path)
        if target is None:
            return
        try:
            info = target.lstat()
        except FileNotFoundError:
            folders: list[Path] = []
            parent = target.parent
            while parent != self.root and not parent.exists():
                folders.append(parent)
                parent = parent.parent
            self._before[path] = _Before(None, None, tuple(folders))
            return
        if not stat.S_ISREG(info.st_mode):
            return  # not a regular file: the edit tool refuses it anyway
        self._before[path] = _Before(target.read_bytes(), stat.S_IMODE(info.st_mode))

    def kept(self) -> list[str]:
        """The paths kept, in the order they were first changed."""
        return list(self._before)

    def changed(self) -> list[str]:
        """The kept paths whose content is not what it was (created, changed or deleted)."""
        return [path for path, before in self._before.items() if self._current(path) != before.data]

    def was_new(self, path: str) -> bool:
        """Whether ``path`` did not exist before the change."""
        before = self._before.get(path)
        return before is not None and before.data is None

    def original(self, path: str) -> bytes | None:
        """The bytes ``path`` had before the change (None: there was no file, or it was not kept)."""
        before = self._before.get(path)
        return before.data if before is not None else None

    def restore(self, paths: list[str] | None = None) -> list[str]:
        """Put ``paths`` (default: every kept path) back as they were; returns those that differed.

        A file that did not exist is deleted, with the folders made for it when they are empty.
        """
        restored: list[str] = []
        for path in list(self._before) if paths is None else paths:
            before = self._before.get(path)
            target = self._path(path)
            if before is None or target is None or self._current(path) == before.data:
                continue
            if before.data is None:
                with contextlib.suppress(FileNotFoundError):
                    target.unlink()
                for folder in before.new_folders:
                    with contextlib.suppress(OSError):
                        folder.rmdir()
            else:
                _write_atomically(target, before.data, before.mode)
            restored.append(path)
        return restored

    def _path(self, path: str) -> Path | None:
        """``root/path`` when it stays inside the root (its folders resolved, not the file itself)."""
        target = self.root / path
        try:
            parent = target.parent.resolve()
        except (OSError, RuntimeError):
            return None
        if parent != self.root and self.root not in parent.parents:
            return None
        return parent / target.name

    def _current(self, path: str) -> bytes | None:
        target = self._path(path)
        if target is None:
            return None
        try:
            return target.read_bytes() if target.is_file() and not target.is_symlink() else None
        except OSError:
            return None


def _write_atomically(target: Path, data: bytes, mode: int | None) -> None:
    """Write ``data`` to ``target`` through a temporary file beside it, renamed over it."""
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".restore")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
