"""The web layer of the tools: SSRF-safe HTTP, page conversion and a per-session page cache.

- :mod:`~nestor.tools.web.addresses`: :class:`AddressPolicy`, which addresses may be fetched.
- :mod:`~nestor.tools.web.client`: :class:`SafeHttpClient`, the SSRF-safe HTTP client.
- :mod:`~nestor.tools.web.pages`: :class:`FetchedPage`, :class:`FetchError`.
- :mod:`~nestor.tools.web.page_tool`: :class:`PageTool`, what ``fetch`` and ``web_fetch`` share.
- :mod:`~nestor.tools.web.content`: :func:`convert` a page to Markdown, JSON or text.
- :mod:`~nestor.tools.web.cache`: :class:`WebCache`, pages a session has fetched.
- :mod:`~nestor.tools.web.saved`: the 50 KB rule: a larger page goes to a file.

The names are importable from this package too; each module is imported when first used (httpx
alone takes ~190 ms to import), so ``addresses`` stays cheap on its own.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nestor.tools.web.addresses import AddressPolicy, parse_host
    from nestor.tools.web.cache import CachedPage, WebCache
    from nestor.tools.web.client import SafeHttpClient
    from nestor.tools.web.content import ConvertedPage, convert
    from nestor.tools.web.pages import FetchedPage, FetchError

_EXPORTS = {
    "AddressPolicy": "addresses",
    "parse_host": "addresses",
    "CachedPage": "cache",
    "WebCache": "cache",
    "FetchError": "pages",
    "FetchedPage": "pages",
    "SafeHttpClient": "client",
    "ConvertedPage": "content",
    "convert": "content",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = [
    "AddressPolicy",
    "CachedPage",
    "ConvertedPage",
    "FetchError",
    "FetchedPage",
    "SafeHttpClient",
    "WebCache",
    "convert",
    "parse_host",
]
