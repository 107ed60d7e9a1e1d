"""The ``web_fetch`` tool: read a web page as Markdown, for research agents.

Unlike ``fetch`` it takes only a URL, remembers what this session fetched (a second fetch of a URL
returns the cached copy) and never floods the context: content over :data:`LARGE_CONTENT_BYTES` is
saved to a file and the model gets its path, to read with ``view`` and search with ``grep``.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar

from pydantic import BaseModel, Field

from nestor.tools.base import ToolContext, ToolResult
from nestor.tools.web.cache import CachedPage
from nestor.tools.web.content import ConvertedPage, convert
from nestor.tools.web.page_tool import PageTool, UrlParams
from nestor.tools.web.pages import FetchedPage
from nestor.tools.web.saved import (
    CACHED_NOTE,
    LARGE_CONTENT_BYTES,
    file_name_for,
    page_result_text,
)


class WebFetchParams(UrlParams):
    """Parameters of the ``web_fetch`` tool."""

    url: str = Field(description="The http:// or https:// URL of the page to read.")


class WebFetchTool(PageTool[WebFetchParams]):
    """Fetches a web page as Markdown; large pages go to a file, repeated URLs come from the cache.

    Args:
        client: The HTTP client (shared with other web tools to pool connections and to apply the
            user's ``[web]`` allow-lists); by default one allowing public addresses only.
        cache: The session's page cache (shared by the tools of one session); by default the
            tool's own. Both are made on first use when not given.

    """

    name: ClassVar[str] = "web_fetch"
    params_model: ClassVar[type[BaseModel]] = WebFetchParams

    async def run(self, params: WebFetchParams, ctx: ToolContext) -> ToolResult:
        """Fetch the page (or take it from the cache) and return it inline or as a saved file."""
        found = await self.page(params.url, _markdown)
        if isinstance(found, ToolResult):
            return found
        url, entry, from_cache = found
        return await self._present(url, entry, ctx, from_cache=from_cache)

    async def _present(
        self, url: str, entry: CachedPage, ctx: ToolContext, *, from_cache: bool
    ) -> ToolResult:
        page = entry.page
        body = await asyncio.to_thread(self._files.body, entry.url, page, ctx)
        metadata: dict[str, object] = {
            "url": url,
            "final_url": entry.url,
            "kind": page.kind,
            "title": page.title,
            "bytes": body.size,
            "body_truncated": entry.truncated,
            "cached": from_cache,
            "saved_path": None if body.saved_path is None else str(body.saved_path),
        }
        text = page_result_text(entry, body, from_cache=from_cache, max_bytes=self.client.max_bytes)
        return ToolResult(text, metadata=metadata)


def _markdown(page: FetchedPage) -> ConvertedPage:
    return convert(page, "markdown")


__all__ = ["CACHED_NOTE", "LARGE_CONTENT_BYTES", "WebFetchParams", "WebFetchTool", "file_name_for"]
