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

from nestor.tools.base import ToolContext, ToolError, ToolResult, clamp_timeout
from nestor.tools.web.client import MAX_BODY_BYTES, MAX_REDIRECTS, USER_AGENT
from nestor.tools.web.content import NOISE_SELECTORS, ConvertedPage, HtmlConversionError, convert, page_text
from nestor.tools.web.page_tool import PageTool, UrlParams
from nestor.tools.web.pages import FetchedPage
from nestor.tools.web.saved import CACHED_NOTE, LARGE_CONTENT_BYTES, page_result_text

DEFAULT_TIMEOUT_SECONDS = 30
MAX_TIMEOUT_SECONDS = 120


class FetchParams(UrlParams):
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


class FetchTool(PageTool[FetchParams]):
    """Fetches a URL and returns its content as Markdown, plain text, raw HTML or pretty JSON.

    Args:
        client: The HTTP client, or what makes it (shared with other web tools to pool connections
            and to apply the user's ``[web]`` allow-lists); by default one that allows public
            addresses only. Made on first use.
        cache: The session's page cache, or what gives it, shared with ``web_fetch``; by default
            the tool's own.

    """

    name: ClassVar[str] = "fetch"
    params_model: ClassVar[type[BaseModel]] = FetchParams

    async def run(self, params: FetchParams, ctx: ToolContext) -> ToolResult:
        """Download the URL (or take it from the session's cache) and render it for the model."""
        notes: list[str] = []
        timeout = clamp_timeout(params.timeout, MAX_TIMEOUT_SECONDS, notes)
        output_format = params.format

        def render(page: FetchedPage) -> ConvertedPage:
            return _render(page, output_format)

        found = await self.page(params.url, render, rendering=output_format, timeout_s=timeout)
        if isinstance(found, ToolResult):
            return found
        url, entry, from_cache = found
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
