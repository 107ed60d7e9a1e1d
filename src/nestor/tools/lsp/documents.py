"""One server's documents: what nestor opened in it, synced from disk, and the diagnostics it published.

Every sync reads the file from disk, so a change made by a shell command is sent too; a file the
server already has unchanged sends nothing. Diagnostics are awaited for the version just sent.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from nestor.core.files import read_bounded_bytes
from nestor.tools.lsp.results import Diagnostic
from nestor.tools.lsp.servers import language_id

if TYPE_CHECKING:
    from nestor.tools.lsp.client import LspClient

MAX_DOCUMENT_BYTES = 2_000_000


@dataclass(frozen=True, slots=True)
class Published:
    """A document's diagnostics as last published: for which version, and in which order they came."""

    version: int | None
    diagnostics: list[Diagnostic]
    sequence: int


@dataclass
class Documents:
    """The documents one server process has open, and what it published about them."""

    opened: dict[str, tuple[int, str]] = field(default_factory=dict[str, tuple[int, str]])
    published: dict[str, Published] = field(default_factory=dict[str, Published])
    sequence: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def publish(self, uri: str, version: int | None, items: list[Diagnostic]) -> None:
        """Record what the server published for ``uri`` and wake whoever waits for it."""
        self.sequence += 1
        self.published[uri] = Published(version, items, self.sequence)
        self.wake()

    def wake(self) -> None:
        """Wake whoever waits for diagnostics (something was published, or the server died)."""
        changed, self.changed = self.changed, asyncio.Event()
        changed.set()

    def sync(self, client: LspClient, path: Path) -> tuple[str, int, bool]:
        """Open or update ``path`` in the server from disk; its URI, version and whether it changed."""
        from lsprotocol import types

        uri = path.as_uri()
        known = self.opened.get(uri)
        text = read_document(path)
        if text is None or (known is not None and known[1] == text):
            return uri, known[0] if known else 0, False
        if known is None:
            version = 1
            item = types.TextDocumentItem(uri=uri, language_id=language_id(path), version=version, text=text)
            client.notify(types.TEXT_DOCUMENT_DID_OPEN, types.DidOpenTextDocumentParams(text_document=item))
        else:
            version = known[0] + 1
            change = types.TextDocumentContentChangeWholeDocument(text=text)
            document = types.VersionedTextDocumentIdentifier(uri=uri, version=version)
            client.notify(
                types.TEXT_DOCUMENT_DID_CHANGE,
                types.DidChangeTextDocumentParams(text_document=document, content_changes=[change]),
            )
            client.notify(
                types.TEXT_DOCUMENT_DID_SAVE,
                types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)),
            )
        self.opened[uri] = (version, text)
        return uri, version, True

    async def diagnostics(
        self, client: LspClient, path: Path, deadline: float, alive: Callable[[], bool]
    ) -> Published | None:
        """Sync ``path`` and wait until ``deadline`` (while ``alive``) for the diagnostics of that version."""
        sequence = self.sequence
        uri, version, changed = self.sync(client, path)
        while True:
            published = self.published.get(uri)
            if (
                published is not None
                and (not changed or published.sequence > sequence)
                and (published.version is None or published.version >= version)
            ):
                return published
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not alive():
                return None
            try:
                await asyncio.wait_for(self.changed.wait(), remaining)
            except TimeoutError:
                return None


def new_problems(current: list[Diagnostic], before: list[Diagnostic]) -> list[Diagnostic]:
    """The errors and warnings of ``current`` that ``before`` did not have (lines may have moved)."""
    seen = Counter(problem.key for problem in before)
    new: list[Diagnostic] = []
    for problem in sorted(current, key=lambda item: (item.line, item.character)):
        if problem.severity > 2:
            continue
        if seen[problem.key]:
            seen[problem.key] -= 1
        else:
            new.append(problem)
    return new


def read_document(path: Path) -> str | None:
    """The text of ``path`` as a server is given it; None for what it cannot be (missing, binary, huge).

    ``path`` is the resolved one a tool's permission judged: it is read without following a link.
    """
    try:
        data = read_bounded_bytes(path, limit_bytes=MAX_DOCUMENT_BYTES, whole=True, resolved=True).data
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        return None
