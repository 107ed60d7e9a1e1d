"""One rule for pages too large to hand a model: over 50 KB, a page goes to a file.

``fetch`` and ``web_fetch`` both return a page inline when its text is at most
:data:`LARGE_CONTENT_BYTES` (UTF-8) and otherwise save it in the session's scratch directory and
return its path, to read with ``view`` and search with ``grep``.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nestor.tools.base import ToolContext
from nestor.tools.web.cache import CachedPage
from nestor.tools.web.content import ConvertedPage

LARGE_CONTENT_BYTES = 50_000
"""Converted content larger than this (UTF-8 bytes) goes to a file instead of into the result."""

SAVED_DIR_NAME = "web"
"""The folder of the scratch directory where large pages are saved."""

CACHED_NOTE = "(already fetched this session; cached copy)"
"""The first line of a page's result when it came from the session's cache."""

_EXTENSIONS = {"markdown": ".md", "json": ".json", "text": ".txt"}
_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_NAME_CHARS = 80


@dataclass(frozen=True, slots=True)
class PageBody:
    """What a tool result says of a page: its text, or where it was saved instead.

    Attributes:
        text: The page itself, or a summary naming the file it was saved to.
        size: The page's size in UTF-8 bytes.
        saved_path: The file, when the page was too large to show.

    """

    text: str
    size: int
    saved_path: Path | None


def page_result_text(
    entry: CachedPage, body: PageBody, *, from_cache: bool, max_bytes: int, notes: Sequence[str] = ()
) -> str:
    """What ``fetch`` and ``web_fetch`` say of a page: cache and redirect notes, the body, a cut note."""
    parts: list[str] = [CACHED_NOTE] if from_cache else []
    if entry.redirects:
        parts.append(f"Redirected to {entry.url}")
    parts.append(body.text)
    if entry.truncated:
        parts.append(f"[Body truncated: only the first {max_bytes / (1024 * 1024):g} MB were read.]")
    parts.extend(notes)
    return "\n\n".join(parts)


class PageFiles:
    """Saves large pages: in the session's scratch directory, else in a temporary folder of its own."""

    def __init__(self) -> None:
        self._temp_dir: Path | None = None

    def body(self, url: str, page: ConvertedPage, ctx: ToolContext, rendering: str = "markdown") -> PageBody:
        """The page inline when small enough, else saved to a file and summarised (blocking I/O).

        ``rendering`` tells apart the files of one URL fetched as Markdown, text or raw HTML.
        """
        size = len(page.text.encode("utf-8"))
        if size <= LARGE_CONTENT_BYTES:
            return PageBody(page.text, size, None)
        path = self._save(url, page, ctx, rendering)
        return PageBody(_saved_summary(url, page, size, path), size, path)

    def _save(self, url: str, page: ConvertedPage, ctx: ToolContext, rendering: str) -> Path:
        if ctx.scratch_dir is not None:
            folder = ctx.scratch_dir / SAVED_DIR_NAME
        else:
            if self._temp_dir is None:
                self._temp_dir = Path(tempfile.mkdtemp(prefix="nestor-web-"))
            folder = self._temp_dir
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / file_name_for(url, page.kind, rendering)
        path.write_text(page.text, encoding="utf-8")
        return path.absolute()


def file_name_for(url: str, kind: str, rendering: str = "markdown") -> str:
    """A readable, unique file name for the content of ``url``: host and path, plus a short hash.

    A rendering other than ``markdown`` (``fetch``'s ``text`` or ``html``) gets its own hash.
    """
    readable = re.sub(r"^[a-z]+://", "", url, flags=re.IGNORECASE).split("#", 1)[0]
    slug = _UNSAFE_NAME_CHARS.sub("-", readable).strip("-.")[:_MAX_NAME_CHARS].rstrip("-.") or "page"
    hashed = url if rendering == "markdown" else f"{url} {rendering}"
    digest = hashlib.sha256(hashed.encode("utf-8")).hexdigest()[:10]
    return f"{slug}-{digest}{_EXTENSIONS.get(kind, '.txt')}"


def _saved_summary(url: str, page: ConvertedPage, size: int, path: Path) -> str:
    title = f' "{page.title}"' if page.title else ""
    return (
        f"The page{title} at {url} is {size:,} bytes of {page.kind}, too large to show here; "
        f"it was saved to {path}.\n"
        "Use view to read it in parts (offset and limit) and grep to search it."
    )


__all__ = ["LARGE_CONTENT_BYTES", "SAVED_DIR_NAME", "PageBody", "PageFiles", "file_name_for"]
