"""The ``fetch`` tool: download a web page or file over http(s) and return it as text.

HTML becomes Markdown (or plain text) with page furniture such as navigation, scripts and footers
removed, JSON is pretty-printed and other text is returned as is; ``format: "html"`` returns the raw
page. Binary content is refused. Downloads go through :class:`~nestor.tools.web.client.SafeHttpClient`,
so private and local addresses are refused unless the user allows them, and bodies stop at
:data:`MAX_BODY_BYTES`.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar, Literal

from pydantic import BaseModel, Field

from nestor.tools.base import PermissionRequest, Tool, ToolContext, ToolError, ToolResult, clamp_timeout
from nestor.tools.web.client import (
    MAX_BODY_BYTES,
    MAX_REDIRECTS,
    USER_AGENT,
    FetchedPage,
    FetchError,
    SafeHttpClient,
    check_url,
)
from nestor.tools.web.content import NOISE_SELECTORS, HtmlConversionError, convert, error_report, page_text
from nestor.tools.web.pages import network_permission

MAX_OUTPUT_CHARS = 100_000
"""Content beyond this many characters is cut off."""

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

    """

    name: ClassVar[str] = "fetch"
    params_model: ClassVar[type[BaseModel]] = FetchParams
    read_only: ClassVar[bool] = True

    def __init__(self, *, client: SafeHttpClient | None = None) -> None:
        self._client = client

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
        """Download the URL and render its content for the model."""
        url = check_url(params.url)
        notes: list[str] = []
        timeout = clamp_timeout(params.timeout, MAX_TIMEOUT_SECONDS, notes)
        try:
            page = await self.client.get(url, timeout_s=timeout, text_only=True)
        except FetchError as error:
            if error.page is None:
                raise
            return await _error_result(url, error.page)

        rendered = await asyncio.to_thread(_render, page, params.format)
        metadata = _metadata(url, page)
        parts: list[str] = []
        if page.redirects:
            parts.append(f"Redirected to {page.url}")
        parts.append(rendered[:MAX_OUTPUT_CHARS])
        if page.truncated:
            megabytes = self.client.max_bytes / (1024 * 1024)
            parts.append(f"[Body truncated: only the first {megabytes:g} MB were read.]")
        metadata["cut_chars"] = max(0, len(rendered) - MAX_OUTPUT_CHARS)
        if len(rendered) > MAX_OUTPUT_CHARS:
            parts.append(f"[Output cut: showing the first {MAX_OUTPUT_CHARS} of {len(rendered)} characters.]")
        parts.extend(notes)
        return ToolResult(content="\n\n".join(parts), metadata=metadata)


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


def _render(page: FetchedPage, output_format: Literal["markdown", "text", "html"]) -> str:
    if output_format == "html":
        return page_text(page)
    try:
        return convert(page, output_format).text
    except HtmlConversionError as error:
        raise ToolError(f'{error}; fetch it with format "html" to get the raw page.') from error


__all__ = [
    "DEFAULT_TIMEOUT_SECONDS",
    "MAX_BODY_BYTES",
    "MAX_OUTPUT_CHARS",
    "MAX_REDIRECTS",
    "MAX_TIMEOUT_SECONDS",
    "NOISE_SELECTORS",
    "USER_AGENT",
    "FetchParams",
    "FetchTool",
]
