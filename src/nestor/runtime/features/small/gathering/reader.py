"""Reading the project's own files for the small-model harness, safely.

Only regular files that resolve inside the project are read (no devices, FIFOs, or links leaving
it), and only up to a size: the harness reads files nobody asked it to, so a hostile repository
must not be able to hang it or point it at secrets.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_READ_BYTES = 512 * 1024


class ProjectReader:
    """Reads text files of one project; anything unsafe or unreadable reads as None."""

    def __init__(self, root: Path, *, max_bytes: int = MAX_READ_BYTES) -> None:
        self.root = root.resolve()
        self.max_bytes = max_bytes
        self._cache: dict[str, str | None] = {}

    def resolve(self, relative: str) -> Path | None:
        """The file ``relative`` names, resolved, when it lies inside the project; else None."""
        try:
            path = (self.root / relative).resolve()
        except (OSError, RuntimeError):
            return None
        if path != self.root and self.root not in path.parents:
            return None
        return path

    def read_text(self, relative: str) -> str | None:
        """The text of ``relative`` (project-relative), or None when missing, unsafe or too large."""
        if relative in self._cache:
            return self._cache[relative]
        text = self._read(relative)
        self._cache[relative] = text
        return text

    def forget(self) -> None:
        """Drop what was read: files changed since (the harness's own edits)."""
        self._cache.clear()

    def _read(self, relative: str) -> str | None:
        path = self.resolve(relative)
        if path is None:
            return None
        try:
            # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > self.max_bytes:
                return None
            data = os.read(fd, self.max_bytes + 1)
        except OSError:
            return None
        finally:
            os.close(fd)
        if b"\0" in data[:8192]:
            return None
        return data.decode("utf-8", errors="replace")
