"""What one session has fetched: converted pages by URL, and every URL it asked for.

A model that fetches the same page twice (a sub-agent re-reading its sources, parallel agents
following the same link) gets the first copy back instead of another download.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from nestor.tools.web.content import ConvertedPage


@dataclass(frozen=True, slots=True)
class CachedPage:
    """A converted page as it was fetched.

    Attributes:
        url: Where the content came from (the last redirect's target, if any).
        page: The converted content.
        truncated: True when the body was cut at the client's size cap.
        redirects: The URLs redirected to on the way, in order.
        status: The HTTP status, when the fetching tool recorded it.
        media_type: The response's content type, when recorded.
        body_bytes: How many bytes of body were read, when recorded.

    """

    url: str
    page: ConvertedPage
    truncated: bool = False
    redirects: tuple[str, ...] = ()
    status: int | None = None
    media_type: str | None = None
    body_bytes: int | None = None


class WebCache:
    """A per-session cache of converted pages by URL, and the record of URLs visited.

    URLs are compared after normalisation (scheme and host case, default port, no fragment); a page
    reached through redirects is cached under the requested URL and under its final URL. Each
    rendering of a page (``markdown``, what ``web_fetch`` and ``fetch`` return by default; ``fetch``'s
    ``text`` and ``html``) is cached apart.
    """

    def __init__(self) -> None:
        self._pages: dict[tuple[str, str], CachedPage] = {}
        self._visited: dict[str, None] = {}

    def get(self, url: str, rendering: str = "markdown") -> CachedPage | None:
        """The cached page of ``url`` in ``rendering``, if it was fetched before."""
        return self._pages.get((rendering, cache_key(url)))

    def put(self, url: str, entry: CachedPage, rendering: str = "markdown") -> None:
        """Cache ``entry`` as the page of ``url`` (and of ``entry.url``) in ``rendering``."""
        for key in (cache_key(url), cache_key(entry.url)):
            self._pages[rendering, key] = entry

    def record_visit(self, url: str) -> None:
        """Note that ``url`` was asked for (fetched or not)."""
        self._visited.setdefault(url.strip(), None)

    @property
    def visited(self) -> tuple[str, ...]:
        """Every URL asked for this session, in first-asked order, without repeats."""
        return tuple(self._visited)

    def __len__(self) -> int:
        return len({id(entry) for entry in self._pages.values()})


def cache_key(url: str) -> str:
    """``url`` normalised for comparison: scheme and host lower-cased, no fragment."""
    try:
        return str(httpx.URL(url.strip()).copy_with(fragment=None))
    except (httpx.InvalidURL, ValueError):
        return url.strip()


__all__ = ["CachedPage", "WebCache", "cache_key"]
