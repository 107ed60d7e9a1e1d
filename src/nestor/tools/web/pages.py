"""What a fetch returns and how it fails: :class:`FetchedPage`, :class:`FetchError` and helpers.

Shared by the client (which makes pages) and the content conversion (which reads them).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from email.message import Message
from urllib.parse import urlsplit

import httpx

from nestor.core.errors import ToolError
from nestor.core.permission import PermissionRequest

ERROR_EXCERPT_BYTES = 64 * 1024
"""How much of an error response's body is read, for its excerpt."""

_TEXTUAL_APPLICATION_TYPES = frozenset(
    {
        "application/json",
        "application/x-ndjson",
        "application/xml",
        "application/xhtml+xml",
        "application/javascript",
        "application/x-javascript",
        "application/ecmascript",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/x-sh",
        "application/sql",
        "application/graphql",
        "application/x-www-form-urlencoded",
    }
)
_NOISE_ELEMENTS = re.compile(r"<(script|style)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]*>")


@dataclass(frozen=True, slots=True)
class FetchedPage:
    """A response: where it came from, its status and type, and its (possibly capped) body.

    Attributes:
        url: The URL the body came from (the last redirect's target, if any).
        status: The HTTP status code.
        content_type: The ``Content-Type`` header as sent ("" when missing).
        body: The body, at most the client's ``max_bytes``.
        truncated: True when the body was longer and reading stopped at the cap.
        redirects: The URLs redirected to, in order (empty without redirects).
        headers: The response headers.

    """

    url: str
    status: int
    content_type: str
    body: bytes
    truncated: bool = False
    redirects: tuple[str, ...] = ()
    headers: httpx.Headers = field(default_factory=httpx.Headers)

    @property
    def media_type(self) -> str:
        """The lower-cased media type without parameters (``text/html``), "" when undeclared."""
        return media_type(self.content_type)

    @property
    def charset(self) -> str | None:
        """The charset the ``Content-Type`` header declares, if any."""
        if not self.content_type.strip():
            return None
        message = Message()
        message["content-type"] = self.content_type
        charset = message.get_content_charset()
        return charset or None


class FetchError(ToolError):
    """A URL cannot or may not be fetched; the message says which, where and why in one line.

    Attributes:
        url: The URL that failed (a redirect's target when a hop failed).
        status: The HTTP status of an error response, None when there was none.
        page: The error response with the start of its body, when there was one.

    """

    def __init__(
        self, message: str, *, url: str = "", status: int | None = None, page: FetchedPage | None = None
    ) -> None:
        super().__init__(message)
        self.url = url
        self.status = status
        self.page = page


def check_url(raw: str) -> str:
    """``raw`` stripped and normalised, if it is an http(s) URL with a host.

    Raises:
        FetchError: Another scheme, no scheme, no host, or an unparsable URL.

    """
    url = raw.strip()
    try:
        parts = urlsplit(url)
        if parts.scheme.lower() not in ("http", "https"):
            scheme = f"the {parts.scheme}: scheme" if parts.scheme else "a URL without a scheme"
            raise FetchError(f"Only http:// and https:// URLs can be fetched, not {scheme} ({raw}).", url=raw)
        if not parts.hostname:
            raise FetchError(f"Invalid URL {raw!r}: it has no host.", url=raw)
        return str(httpx.URL(url))
    except (ValueError, httpx.InvalidURL) as error:
        raise FetchError(f"Invalid URL {raw!r}: {error}", url=raw) from None


def network_permission(tool_name: str, url: str) -> PermissionRequest:
    """What fetching ``url`` asks for: network access, a session grant covering one scheme and host."""
    return PermissionRequest(
        tool_name=tool_name,
        action="network",
        target=url,
        description=f"Fetch {url}",
        grant_key=origin_of(url),
    )


def origin_of(raw: str) -> str:
    """``scheme://host[:port]`` of a URL, or the URL itself when it cannot be parsed."""
    try:
        parts = urlsplit(raw.strip())
        port = parts.port
    except ValueError:
        return raw
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme.lower()}://{host}" + (f":{port}" if port else "")


def media_type(content_type: str) -> str:
    """The media type of a ``Content-Type`` value (``text/html``), "" when it is empty."""
    if not content_type.strip():
        return ""
    message = Message()
    message["content-type"] = content_type
    return message.get_content_type()


def is_textual(kind: str) -> bool:
    """Return True for media types that are text: ``text/*``, JSON, XML, JavaScript, YAML, ..."""
    return kind.startswith("text/") or kind in _TEXTUAL_APPLICATION_TYPES or kind.endswith(("+json", "+xml"))


def binary_refusal(url: str, kind: str) -> str:
    """The refusal of binary content of type ``kind`` (or undeclared, when "")."""
    what = f"of type {kind}" if kind else "(no content type declared)"
    return f"Refused to fetch binary content {what} from {url}; only text pages can be read."


def http_error(page: FetchedPage, *, note: str = "") -> FetchError:
    """The error of a non-2xx response: status, reason, URL and the start of the body."""
    reason = httpx.codes.get_reason_phrase(page.status)
    message = f"HTTP {page.status} {reason} from {page.url}".replace("  ", " ")
    if note:
        message += f" ({note})"
    excerpt = _plain_excerpt(page.body)
    if excerpt:
        message += f": {excerpt}"
    return FetchError(message, url=page.url, status=page.status, page=page)


def _plain_excerpt(body: bytes, limit: int = 200) -> str:
    text = _TAG.sub(" ", _NOISE_ELEMENTS.sub(" ", body[:ERROR_EXCERPT_BYTES].decode("utf-8", "replace")))
    text = " ".join(html.unescape(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = [
    "ERROR_EXCERPT_BYTES",
    "FetchError",
    "FetchedPage",
    "binary_refusal",
    "check_url",
    "http_error",
    "is_textual",
    "media_type",
    "origin_of",
]
