"""Files as the editor nestor runs in holds them (ACP's ``fs/*``), for ``view``, ``edit`` and ``write``.

Where an editor offers its files, a read sees its unsaved buffer and a write lands in its undo
history. The disk stays the judge of what may be read: a file is first checked there (a regular
file, not too large, text), as without an editor; only its text then comes from the editor.
Without an editor, or for what it does not offer, the disk is used as ever.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from nestor.core.errors import ToolError
from nestor.core.files import DIRECTORY_FLAGS, LinkInPathError, open_no_links
from nestor.tools._text import TextFile, link_error, special_file_error, write_bytes


class EditorFiles(Protocol):
    """The editor's side of file access; each method says when the editor does not serve it."""

    async def read_text(self, path: Path) -> str | None:
        """The text of ``path`` as the editor has it (unsaved changes included); None: read the disk.

        Raises:
            Exception: The editor failed to read it.

        """
        ...

    async def write_text(self, path: Path, text: str) -> bool:
        """Write ``text`` to ``path`` through the editor; False: write the disk instead.

        Raises:
            Exception: The editor failed to write it.

        """
        ...


async def editor_text(files: EditorFiles | None, path: Path, on_disk: TextFile) -> TextFile:
    """``on_disk`` with the editor's text of the file, when an editor serves it (the disk's if it fails)."""
    if files is None:
        return on_disk
    try:
        text = await files.read_text(path)
    except Exception:  # the editor could not read what the disk could: the disk's text is the file's
        return on_disk
    return on_disk if text is None else TextFile(text=text, has_bom=on_disk.has_bom)


async def write_text(
    files: EditorFiles | None,
    path: Path,
    text: str,
    shown_as: str,
    encode: Callable[[str], bytes] = lambda text: text.encode("utf-8"),
) -> None:
    """Write ``text`` to ``path``: through the editor when one serves it, else to disk as ``encode`` says.

    Raises:
        ToolError: The path is a special file, a parent is a file, or the write failed.

    """
    if files is not None:
        await asyncio.to_thread(_prepare, path, shown_as)
        try:
            if await files.write_text(path, text):
                return
        except Exception as exc:  # the editor's answer, in a line the model can act on
            raise ToolError(f"Cannot write {shown_as}: the editor refused it ({exc}).") from None
    await asyncio.to_thread(write_bytes, path, encode(text), shown_as)


def _prepare(path: Path, shown_as: str) -> None:
    """Refuse what the disk write would refuse (a FIFO, a device), and make the missing directories.

    The directories are made without following a link (``path`` is the resolved one its permission
    judged); the editor then writes the file by its path.
    """
    if path.exists() and not path.is_file():
        raise special_file_error(shown_as, None, "write to a regular file instead")
    try:
        os.close(open_no_links(path.parent, DIRECTORY_FLAGS, make_parents=True))
    except LinkInPathError as exc:
        raise link_error("write", shown_as, exc) from None
    except OSError as exc:
        raise ToolError(f"Cannot write {shown_as}: {exc.strerror or exc}.") from None
