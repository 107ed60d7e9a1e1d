"""The ``fetch`` tool: download a web page or file over http(s) and return it as text.

HTML becomes Markdown (or plain text) with page furniture such as navigation, scripts and footers
removed, JSON is pretty-printed and other text is returned as is. Binary content is refused. The
body is read as a stream and reading stops at :data:`MAX_BODY_BYTES`, so a huge or endless
response cannot exhaust memory.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from email.message import Message
from typing import ClassVar, Literal
from urllib.parse import urlsplit

import httpx
from html_to_markdown import ConversionError, ConversionOptions, InlineDataMedia, OutputFormat, convert
from pydantic import BaseModel, Field

from nestor.tools.base import PermissionRequest, Tool, ToolContext, ToolError, ToolResult, clamp_timeout

MAX_BODY_BYTES = 5 * 1024 * 1024
"""Reading a response body stops after this many bytes."""

MAX_OUTPUT_CHARS = 100_000
"""Content beyond this many characters is cut off."""

MAX_REDIRECTS = 5
DEFAULT_TIMEOUT_SECONDS = 30
MAX_TIMEOUT_SECONDS = 120

USER_AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
)
ACCEPT = "text/html,application/xhtml+xml,application/json;q=0.9,text/plain;q=0.9,*/*;q=0.8"

NOISE_SELECTORS = ("script", "style", "nav", "header", "footer", "aside", "iframe", "svg", "noscript")
"""Elements removed with their content before HTML is converted: they are page furniture, not content."""

_ERROR_EXCERPT_BYTES = 64 * 1024
_ERROR_EXCERPT_CHARS = 2_000
_SNIFF_BYTES = 1_024
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([a-z0-9._:-]+)""", re.IGNORECASE)
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

ClientFactory = Callable[[], httpx.AsyncClient]
"""Makes the HTTP client of one fetch; the tool closes it when the fetch is done."""


def default_client() -> httpx.AsyncClient:
    """An HTTP client following up to :data:`MAX_REDIRECTS` redirects and ignoring proxy variables."""
    return httpx.AsyncClient(
        follow_redirects=True,
        max_redirects=MAX_REDIRECTS,
        timeout=DEFAULT_TIMEOUT_SECONDS,
        trust_env=False,
        headers={"User-Agent": USER_AGENT, "Accept": ACCEPT},
    )


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
        description=f"Seconds to wait for the whole download (default {DEFAULT_TIMEOUT_SECONDS}, "
        f"max {MAX_TIMEOUT_SECONDS}).",
    )


@dataclass(slots=True)
class _Download:
    final_url: str
    status: int
    reason: str
    media_type: str
    charset: str | None
    body: bytes
    truncated: bool
    redirected: bool


class FetchTool(Tool[FetchParams]):
    """Fetches a URL and returns its content as Markdown, plain text, raw HTML or pretty JSON."""

    name: ClassVar[str] = "fetch"
    params_model: ClassVar[type[BaseModel]] = FetchParams
    read_only: ClassVar[bool] = True

    def __init__(self, *, client_factory: ClientFactory = default_client) -> None:
        self._client_factory = client_factory

    def permission(self, params: FetchParams, ctx: ToolContext) -> PermissionRequest | None:
        """Network access needs the user's approval; a session grant covers one scheme and host."""
        return PermissionRequest(
            tool_name=self.name,
            action="network",
            target=params.url,
            description=f"Fetch {params.url}",
            grant_key=_origin(params.url),
        )

    async def run(self, params: FetchParams, ctx: ToolContext) -> ToolResult:
        """Download the URL and render its content for the model."""
        url = _check_url(params.url)
        notes: list[str] = []
        timeout = clamp_timeout(params.timeout, MAX_TIMEOUT_SECONDS, notes)

        download = await self._download(url, timeout)
        text = _decode(download.body, download.charset, download.truncated, download.media_type)
        rendered = await asyncio.to_thread(_render, text, download, params.format)
        metadata: dict[str, object] = {
            "url": url,
            "final_url": download.final_url,
            "status": download.status,
            "content_type": download.media_type,
            "bytes": len(download.body),
            "body_truncated": download.truncated,
        }
        if not 200 <= download.status < 300:
            excerpt = rendered[:_ERROR_EXCERPT_CHARS].strip()
            message = f"HTTP {download.status} {download.reason} from {download.final_url}"
            return ToolResult(content=f"{message}\n\n{excerpt}".strip(), is_error=True, metadata=metadata)

        parts: list[str] = []
        if download.redirected:
            parts.append(f"Redirected to {download.final_url}")
        parts.append(rendered[:MAX_OUTPUT_CHARS])
        if download.truncated:
            parts.append(f"[Body truncated: only the first {MAX_BODY_BYTES // (1024 * 1024)} MB were read.]")
        metadata["cut_chars"] = max(0, len(rendered) - MAX_OUTPUT_CHARS)
        if len(rendered) > MAX_OUTPUT_CHARS:
            parts.append(f"[Output cut: showing the first {MAX_OUTPUT_CHARS} of {len(rendered)} characters.]")
        parts.extend(notes)
        return ToolResult(content="\n\n".join(parts), metadata=metadata)

    async def _download(self, url: str, timeout: int) -> _Download:
        try:
            async with (
                asyncio.timeout(timeout),
                self._client_factory() as client,
                client.stream("GET", url, timeout=timeout) as response,
            ):
                return await _read_response(response)
        except TimeoutError as error:
            raise ToolError(f"Fetching {url} timed out after {timeout} s.") from error
        except httpx.TimeoutException as error:
            raise ToolError(f"Fetching {url} timed out after {timeout} s.") from error
        except httpx.TooManyRedirects as error:
            raise ToolError(f"Fetching {url} failed: redirected more than {MAX_REDIRECTS} times.") from error
        except httpx.HTTPError as error:
            raise ToolError(f"Fetching {url} failed: {str(error) or type(error).__name__}") from error


async def _read_response(response: httpx.Response) -> _Download:
    content_type = response.headers.get("content-type", "")
    media_type = _media_type(content_type)
    success = response.is_success
    if success and media_type and not _is_textual(media_type):
        raise ToolError(f"Refused to fetch binary content of type {media_type}; this tool reads text only.")
    if not success and media_type and not _is_textual(media_type):
        body, truncated = b"", False
    else:
        body, truncated = await _read_capped(response, MAX_BODY_BYTES if success else _ERROR_EXCERPT_BYTES)
    if success and not media_type and b"\x00" in body[:_SNIFF_BYTES]:
        raise ToolError(
            "Refused to fetch binary content (no content type declared); this tool reads text only."
        )
    return _Download(
        final_url=str(response.url),
        status=response.status_code,
        reason=response.reason_phrase,
        media_type=media_type,
        charset=response.charset_encoding,
        body=body,
        truncated=truncated and success,
        redirected=bool(response.history),
    )


async def _read_capped(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """Read at most ``limit`` bytes of the body, and whether more were left unread."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        room = limit - size
        if len(chunk) > room:
            chunks.append(chunk[:room])
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False


def _check_url(raw: str) -> str:
    url = raw.strip()
    try:
        parts = urlsplit(url)
    except ValueError as error:
        raise ToolError(f"Invalid URL {raw!r}: {error}") from error
    if parts.scheme.lower() not in ("http", "https"):
        scheme = f"the {parts.scheme}: scheme" if parts.scheme else "a URL without a scheme"
        raise ToolError(f"Only http:// and https:// URLs can be fetched, not {scheme} ({raw}).")
    if not parts.hostname:
        raise ToolError(f"Invalid URL {raw!r}: it has no host.")
    return url


def _origin(raw: str) -> str:
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


def _media_type(content_type: str) -> str:
    message = Message()
    message["content-type"] = content_type
    return message.get_content_type() if content_type.strip() else ""


def _is_textual(media_type: str) -> bool:
    return (
        media_type.startswith("text/")
        or media_type in _TEXTUAL_APPLICATION_TYPES
        or media_type.endswith(("+json", "+xml"))
    )


def _is_html(media_type: str, text: str) -> bool:
    if media_type in ("text/html", "application/xhtml+xml"):
        return True
    # Servers that declare no content type still send HTML often enough to be worth a look.
    return not media_type and text.lstrip()[:15].lower().startswith(("<!doctype html", "<html"))


def _decode(body: bytes, declared: str | None, truncated: bool, media_type: str) -> str:
    """Decode with the declared charset, else UTF-8 when it fits, else the detected charset."""
    if not declared and media_type in ("text/html", "application/xhtml+xml"):
        declared = _meta_charset(body)
    encoding = _known_encoding(declared)
    if encoding:
        return body.decode(encoding, errors="replace")
    try:
        # Not final when truncated: the cut may fall inside a multi-byte character.
        return codecs.getincrementaldecoder("utf-8")().decode(body, final=not truncated)
    except UnicodeDecodeError:
        pass
    return body.decode(_detect_encoding(body) or "utf-8", errors="replace")


def _known_encoding(label: str | None) -> str | None:
    if not label:
        return None
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    # As browsers do (WHATWG Encoding): these labels mean windows-1252, a superset of both.
    return "cp1252" if name in ("iso8859-1", "ascii") else name


def _meta_charset(body: bytes) -> str | None:
    match = _META_CHARSET.search(body[: _SNIFF_BYTES * 4])
    return match.group(1).decode("ascii") if match else None


def _detect_encoding(body: bytes) -> str | None:
    try:
        # Optional: installed with most HTTP stacks but not a dependency of nestor.
        from charset_normalizer import from_bytes
    except ImportError:
        return None
    matches = from_bytes(body[:_ERROR_EXCERPT_BYTES])
    # Detection cannot tell the Western code pages apart on short text (it reads French as
    # Baltic); windows-1252 is the web's legacy default, so it wins whenever it is plausible.
    if any(match.encoding == "cp1252" for match in matches):
        return "cp1252"
    best = matches.best()
    return best.encoding if best else None


def _render(text: str, download: _Download, output_format: str) -> str:
    if output_format == "html":
        return text
    if _is_html(download.media_type, text):
        options = ConversionOptions(
            output_format=OutputFormat.PLAIN if output_format == "text" else OutputFormat.MARKDOWN,
            exclude_selectors=list(NOISE_SELECTORS),
            extract_metadata=False,
            inline_data_media=InlineDataMedia.ALT_TEXT_ONLY,
            base_url=download.final_url,
        )
        try:
            return convert(text, options).content or ""
        except ConversionError as error:
            raise ToolError(
                f"Could not convert the HTML of {download.final_url} ({error}); "
                'fetch it with format "html" to get the raw page.'
            ) from error
    if download.media_type == "application/json" or download.media_type.endswith("+json"):
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            return text
    return text
