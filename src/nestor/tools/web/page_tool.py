"""What ``fetch`` and ``web_fetch`` share: one client and one page cache, asked the same way.

Both tools take a URL, check it, ask the user for the network, and download a page at most once per
session and rendering: :meth:`PageTool.page` gives the page from the session's cache or the
network, rendered and cached, or the error report of a server that answered with an error. What
each tool then shows the model is its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel

from nestor.tools.base import PermissionRequest, Tool, ToolContext, ToolResult
from nestor.tools.web.cache import CachedPage, WebCache
from nestor.tools.web.client import SafeHttpClient
from nestor.tools.web.content import ConvertedPage, error_report
from nestor.tools.web.pages import FetchedPage, FetchError, check_url, network_permission
from nestor.tools.web.saved import PageFiles


class UrlParams(BaseModel):
    """Parameters with the URL a web tool fetches."""

    url: str


UrlParamsT = TypeVar("UrlParamsT", bound=UrlParams)


class PageTool(Tool[UrlParamsT]):
    """A tool that reads web pages through the session's client and page cache.

    Args:
        client: The HTTP client (shared with other web tools to pool connections and to apply the
            user's ``[web]`` allow-lists), or what makes it; by default one allowing public
            addresses only.
        cache: The session's page cache (shared by the web tools of one session), or what gives
            it; by default the tool's own. Both are made or asked for on first use: an agent that
            never fetches builds neither.

    """

    def __init__(
        self,
        client: SafeHttpClient | Callable[[], SafeHttpClient] | None = None,
        cache: WebCache | Callable[[], WebCache] | None = None,
    ) -> None:
        self._client = client
        self._cache = cache
        self._files = PageFiles()  # where a page too large for a model is saved

    @property
    def client(self) -> SafeHttpClient:
        """The HTTP client, made (or asked for) on first use."""
        if self._client is None:
            self._client = SafeHttpClient()
        elif not isinstance(self._client, SafeHttpClient):
            self._client = self._client()
        return self._client

    @property
    def cache(self) -> WebCache:
        """The session's page cache, made (or asked for) on first use."""
        if self._cache is None:
            self._cache = WebCache()
        elif not isinstance(self._cache, WebCache):
            self._cache = self._cache()
        return self._cache

    def permission(self, params: UrlParamsT, ctx: ToolContext) -> PermissionRequest | None:
        """Network access needs approval (or a policy allowing it); a grant covers one scheme and host."""
        return network_permission(self.name, params.url)

    async def page(
        self,
        raw_url: str,
        render: Callable[[FetchedPage], ConvertedPage],
        *,
        rendering: str = "markdown",
        timeout_s: float | None = None,
    ) -> tuple[str, CachedPage, bool] | ToolResult:
        """The URL checked, its page and whether it came from the cache; or a server's error, reported.

        Raises:
            FetchError: The URL is invalid or refused, or the request failed with no answer.

        """
        url = check_url(raw_url)
        cache = self.cache
        cache.record_visit(url)
        entry = cache.get(url, rendering)
        if entry is not None:
            return url, entry, True
        try:
            fetched = await self.client.get(url, timeout_s=timeout_s, text_only=True)
        except FetchError as error:
            if error.page is None:
                raise
            report = await asyncio.to_thread(error_report, error.page)
            return ToolResult(content=report, is_error=True, metadata=_error_metadata(url, error.page))
        rendered = await asyncio.to_thread(render, fetched)
        entry = CachedPage(
            fetched.url,
            rendered,
            fetched.truncated,
            fetched.redirects,
            fetched.status,
            fetched.media_type,
            len(fetched.body),
        )
        cache.put(url, entry, rendering)
        cache.record_visit(fetched.url)
        return url, entry, False


def _error_metadata(url: str, page: FetchedPage) -> dict[str, object]:
    return {
        "url": url,
        "final_url": page.url,
        "status": page.status,
        "content_type": page.media_type,
        "bytes": len(page.body),
        "body_truncated": page.truncated,
    }
