"""The editor's files over ACP (``fs/read_text_file``, ``fs/write_text_file``), for nestor's file tools.

Built only where the client advertises them, each method for the one it advertises; what it does
not offer goes to the disk (:class:`~nestor.tools.editor_files.EditorFiles` says how).
"""

from __future__ import annotations

from pathlib import Path

import acp
from acp.schema import FileSystemCapabilities


class ClientFiles:
    """``view``, ``edit`` and ``write`` through the editor of one ACP session.

    Args:
        conn: The client.
        capabilities: What the client said it offers.

    Attributes:
        session_id: The ACP session the requests name; set once the session exists (no tool runs
            before).

    """

    def __init__(self, conn: acp.Client, capabilities: FileSystemCapabilities) -> None:
        self._conn = conn
        self._reads = bool(capabilities.read_text_file)
        self._writes = bool(capabilities.write_text_file)
        self.session_id = ""

    async def read_text(self, path: Path) -> str | None:
        """The editor's text of ``path`` (its unsaved buffer if open); None when it offers no reads."""
        if not self._reads:
            return None
        response = await self._conn.read_text_file(session_id=self.session_id, path=str(path))
        return response.content

    async def write_text(self, path: Path, text: str) -> bool:
        """Write through the editor (its undo history has it); False when it offers no writes."""
        if not self._writes:
            return False
        await self._conn.write_text_file(session_id=self.session_id, path=str(path), content=text)
        return True


def client_files(conn: acp.Client, capabilities: FileSystemCapabilities | None) -> ClientFiles | None:
    """The editor's files, or None when the client offers neither reads nor writes."""
    if capabilities is None or not (capabilities.read_text_file or capabilities.write_text_file):
        return None
    return ClientFiles(conn, capabilities)
