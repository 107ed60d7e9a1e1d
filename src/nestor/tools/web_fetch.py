"""The ``web_fetch`` tool: read a web page as Markdown, for research agents.

Unlike ``fetch`` it takes only a URL, remembers what this session fetched (a second fetch of a URL
returns the cached copy) and never floods the context: content over :data:`LARGE_CONTENT_BYTES` is
saved to a file and the model gets its path, to read with ``view`` and search with ``grep``.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar

from pydantic import BaseModel, Field

from nestor.tools.base import PermissionRequest, Tool, ToolContext, ToolResult
from nestor.tools.web.cache import CachedPage, WebCache
from nestor.tools.web.client import FetchError, SafeHttpClient, check_url
from nestor.tools.web.content import convert, error_report
from nestor.tools.web.pages import network_permission
from nestor.tools.web.saved import (
    CACHED_NOTE,
    LARGE_CONTENT_BYTES,
    PageFiles,
    file_name_for,
    page_result_text,
)


class WebFetchParams(BaseModel):
    """Parameters of the ``web_fetch`` tool."""

    url: str = Field(description="The http:// or https:// URL of the page to read.")


class WebFetchTool(Tool[WebFetchParams]):
    """Fetches a web page as Markdown; large pages go to a file, repeated URLs come from the cache.

    Args:
        client: The HTTP client (shared with other web tools to pool connections and to apply the
            user's ``[web]`` allow-lists); by default one allowing public addresses only.
        cache: The session's page cache (shared by the tools of one session); by default the
            tool's own. Both are made on first use when not given.

    """

    name: ClassVar[str] = "web_fetch"
    params_model: ClassVar[type[BaseModel]] = WebFetchParams

    def __init__(self, client: SafeHttpClient | None = None, cache: WebCache | None = None) -> None:
        self._client = client
        self._cache = cache
        self._files = PageFiles()

    @property
    def client(self) -> SafeHttpClient:
        """The HTTP client, made on first use when none was given."""
        if self._client is None:
            self._client = SafeHttpClient()
        return self._client

    @property
    def cache(self) -> WebCache:
        """The session's page cache, made on first use when none was given."""
        if self._cache is None:
            self._cache = WebCache()
        return self._cache

    def permission(self, params: WebFetchParams, ctx: ToolContext) -> PermissionRequest | None:
        """Network access needs approval (or a policy allowing it); a grant covers one scheme and host."""
        return network_permission(self.name, params.url)

    async def run(self, params: WebFetchParams, ctx: ToolContext) -> ToolResult:
        """Fetch the page (or take it from the cache) and return it inline or as a saved file."""
        url = check_url(params.url)
        cache = self.cache
        cache.record_visit(url)
        cached = cache.get(url)
        if cached is not None:
            return await self._present(url, cached, ctx, from_cache=True)
        try:
            page = await self.client.get(url, text_only=True)
        except FetchError as error:
            if error.page is None:
                raise
            report = await asyncio.to_thread(error_report, error.page)
            return ToolResult(report, is_error=True, metadata={"url": url, "status": error.page.status})
        converted = await asyncio.to_thread(convert, page, "markdown")
        entry = CachedPage(page.url, converted, page.truncated, page.redirects)
        cache.put(url, entry)
        cache.record_visit(page.url)
        return await self._present(url, entry, ctx, from_cache=False)

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


__all__ = ["CACHED_NOTE", "LARGE_CONTENT_BYTES", "WebFetchParams", "WebFetchTool", "file_name_for"]
