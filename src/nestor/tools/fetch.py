"""The ``fetch`` tool: download a web page or file over http(s) and return it as text.

HTML becomes Markdown (or plain text) with page furniture such as navigation, scripts and footers
removed, JSON is pretty-printed and other text is returned as is; ``format: "html"`` returns the raw
page. Binary content is refused. Downloads go through :class:`~nestor.tools.web.client.SafeHttpClient`,
so private and local addresses are refused unless the user allows them, and bodies stop at
:data:`MAX_BODY_BYTES`. Like ``web_fetch``, with which it shares the session's page cache, it
downloads a URL once per session (and format), and saves content over 50 KB to a file
(:mod:`nestor.tools.web.saved`).
"""

from __future__ import annotations

import asyncio
from typing import ClassVar, Literal

from pydantic import BaseModel, Field

from nestor.tools.base import PermissionRequest, Tool, ToolContext, ToolError, ToolResult, clamp_timeout
from nestor.tools.web.cache import CachedPage, WebCache
from nestor.tools.web.client import (
    MAX_BODY_BYTES,
    MAX_REDIRECTS,
    USER_AGENT,
    FetchedPage,
    FetchError,
    SafeHttpClient,
    check_url,
)
from nestor.tools.web.content import (
    NOISE_SELECTORS,
    ConvertedPage,
    HtmlConversionError,
    convert,
    error_report,
    page_text,
)
from nestor.tools.web.pages import network_permission
from nestor.tools.web.saved import CACHED_NOTE, LARGE_CONTENT_BYTES, PageFiles, page_result_text

DEFAULT_TIMEOUT_SECONDS = 30
MAX_TIMEOUT_SECONDS = 120


class FetchParams(BaseModel):
    """Parameters of the ``fetch`` tool."""

    url: str = Field(description="The http:// or https:// URL to fetch.")
    format: Literal["markdown", "text", "html"] = Field(
        default="markdown",
        description="How to return HTML pages: `markdown` (default), plain `text`, or the raw `html`.",
    )
    timeout: int = Field(
        default=DEFAULT_TIMEOUT_SECONDS,
        ge=1,
        description=f"Seconds to wait for each request, body included (default {DEFAULT_TIMEOUT_SECONDS}, "
        f"max {MAX_TIMEOUT_SECONDS}).",
    )


class FetchTool(Tool[FetchParams]):
    """Fetches a URL and returns its content as Markdown, plain text, raw HTML or pretty JSON.

    Args:
        client: The HTTP client (shared with other web tools to pool connections and to apply the
            user's ``[web]`` allow-lists); by default one that allows public addresses only, made
            on first use.
        cache: The session's page cache, shared with ``web_fetch``; by default the tool's own.

    """

    name: ClassVar[str] = "fetch"
    params_model: ClassVar[type[BaseModel]] = FetchParams

    def __init__(self, *, client: SafeHttpClient | None = None, cache: WebCache | None = None) -> None:
        self._client = client
        self.cache = WebCache() if cache is None else cache
        self._files = PageFiles()

    @property
    def client(self) -> SafeHttpClient:
        """The HTTP client, made on first use when none was given."""
        if self._client is None:
            self._client = SafeHttpClient()
        return self._client

    def permission(self, params: FetchParams, ctx: ToolContext) -> PermissionRequest | None:
        """Network access needs the user's approval; a session grant covers one scheme and host."""
        return network_permission(self.name, params.url)

    async def run(self, params: FetchParams, ctx: ToolContext) -> ToolResult:
        """Download the URL (or take it from the session's cache) and render it for the model."""
        url = check_url(params.url)
        notes: list[str] = []
        timeout = clamp_timeout(params.timeout, MAX_TIMEOUT_SECONDS, notes)
        self.cache.record_visit(url)
        entry = self.cache.get(url, params.format)
        from_cache = entry is not None
        if entry is None:
            try:
                page = await self.client.get(url, timeout_s=timeout, text_only=True)
            except FetchError as error:
                if error.page is None:
                    raise
                return await _error_result(url, error.page)
            rendered = await asyncio.to_thread(_render, page, params.format)
            entry = CachedPage(
                page.url,
                rendered,
                page.truncated,
                page.redirects,
                page.status,
                page.media_type,
                len(page.body),
            )
            self.cache.put(url, entry, params.format)
            self.cache.record_visit(page.url)
        body = await asyncio.to_thread(self._files.body, entry.url, entry.page, ctx, params.format)
        metadata: dict[str, object] = {
            "url": url,
            "final_url": entry.url,
            "status": entry.status,
            "content_type": entry.media_type,
            "bytes": entry.body_bytes,
            "body_truncated": entry.truncated,
            "cached": from_cache,
            "saved_path": None if body.saved_path is None else str(body.saved_path),
        }
        text = page_result_text(
            entry, body, from_cache=from_cache, max_bytes=self.client.max_bytes, notes=notes
        )
        return ToolResult(content=text, metadata=metadata)


async def _error_result(url: str, page: FetchedPage) -> ToolResult:
    report = await asyncio.to_thread(error_report, page)
    return ToolResult(content=report, is_error=True, metadata=_metadata(url, page))


def _metadata(url: str, page: FetchedPage) -> dict[str, object]:
    return {
        "url": url,
        "final_url": page.url,
        "status": page.status,
        "content_type": page.media_type,
        "bytes": len(page.body),
        "body_truncated": page.truncated,
    }


def _render(page: FetchedPage, output_format: Literal["markdown", "text", "html"]) -> ConvertedPage:
    if output_format == "html":
        return ConvertedPage(page_text(page), "text")
    try:
        return convert(page, output_format)
    except HtmlConversionError as error:
        raise ToolError(f'{error}; fetch it with format "html" to get the raw page.') from error


__all__ = [
    "CACHED_NOTE",
    "DEFAULT_TIMEOUT_SECONDS",
    "LARGE_CONTENT_BYTES",
    "MAX_BODY_BYTES",
    "MAX_REDIRECTS",
    "MAX_TIMEOUT_SECONDS",
    "NOISE_SELECTORS",
    "USER_AGENT",
    "FetchParams",
    "FetchTool",
]
