"""Turning a fetched page into text a model can read.

The body is decoded with the charset the response declares, else the one an HTML page declares in
a ``<meta>`` tag, else UTF-8 when it fits, else the charset ``charset-normalizer`` detects. HTML
becomes Markdown (or plain text) with page furniture such as navigation, scripts and footers
removed; JSON is pretty-printed; other text is returned as is. Binary content is refused.
"""

from __future__ import annotations

import codecs
import html
import json
import re
from dataclasses import dataclass
from typing import Literal

import httpx
from html_to_markdown import ConversionError, ConversionOptions, InlineDataMedia, OutputFormat
from html_to_markdown import convert as html_to_markdown

from nestor.tools.web.pages import FetchedPage, FetchError, binary_refusal, is_textual

NOISE_SELECTORS = ("script", "style", "nav", "header", "footer", "aside", "iframe", "svg", "noscript")
"""Elements removed with their content before HTML is converted: they are page furniture, not content."""

ContentKind = Literal["markdown", "json", "text"]

_HTML_TYPES = ("text/html", "application/xhtml+xml")
_SNIFF_BYTES = 1_024
_DETECT_BYTES = 64 * 1024
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([a-z0-9._:-]+)""", re.IGNORECASE)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True, slots=True)
class ConvertedPage:
    """A page as text for a model.

    Attributes:
        text: The content: Markdown, pretty-printed JSON or text.
        kind: What ``text`` is.
        title: The HTML ``<title>``, if the page has one.

    """

    text: str
    kind: ContentKind
    title: str | None = None


class HtmlConversionError(FetchError):
    """A page's HTML could not be converted; the raw HTML may still be read."""


def convert(page: FetchedPage, output: Literal["markdown", "text"] = "markdown") -> ConvertedPage:
    """Render ``page`` for a model: HTML as Markdown (or plain text), JSON pretty, text as is.

    CPU-bound on large pages (a 5 MB page takes ~0.3 s): async callers run it in a thread.

    Raises:
        FetchError: The page is binary (the message names its content type).
        HtmlConversionError: The HTML could not be converted.

    """
    text = page_text(page)
    kind = page.media_type
    if is_html(kind, text):
        return ConvertedPage(
            _html_to_text(text, page.url, output), "text" if output == "text" else "markdown", _title(text)
        )
    if kind == "application/json" or kind.endswith("+json"):
        try:
            return ConvertedPage(json.dumps(json.loads(text), indent=2, ensure_ascii=False), "json")
        except ValueError:
            return ConvertedPage(text, "text")
    return ConvertedPage(text, "markdown" if kind == "text/markdown" else "text")


def page_text(page: FetchedPage) -> str:
    """The body of ``page`` decoded to text.

    Raises:
        FetchError: The declared type is not text, or nothing is declared and the body looks binary.

    """
    kind = page.media_type
    if kind and not is_textual(kind):
        raise FetchError(binary_refusal(page.url, kind), url=page.url)
    if not kind and b"\x00" in page.body[:_SNIFF_BYTES]:
        raise FetchError(binary_refusal(page.url, ""), url=page.url)
    return decode(page.body, page.charset, kind, truncated=page.truncated)


def error_excerpt(page: FetchedPage, limit: int = 2_000) -> str:
    """The start of an error response's body as text ("" when it is binary or unreadable)."""
    try:
        return convert(page).text[:limit].strip()
    except FetchError:
        return ""


def error_report(page: FetchedPage) -> str:
    """An error response for a model: ``HTTP 404 Not Found from <url>`` and the start of its body."""
    reason = httpx.codes.get_reason_phrase(page.status)
    return f"HTTP {page.status} {reason} from {page.url}\n\n{error_excerpt(page)}".strip()


def is_html(kind: str, text: str) -> bool:
    """Return True when a body of media type ``kind`` is HTML (sniffed when no type is declared)."""
    if kind in _HTML_TYPES:
        return True
    # Servers that declare no content type still send HTML often enough to be worth a look.
    return not kind and text.lstrip()[:15].lower().startswith(("<!doctype html", "<html"))


def decode(body: bytes, declared: str | None, kind: str = "", *, truncated: bool = False) -> str:
    """Decode with the declared charset, else an HTML meta charset, else UTF-8 when it fits, else detect."""
    if not declared and kind in _HTML_TYPES:
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


def _html_to_text(text: str, base_url: str, output: str) -> str:
    options = ConversionOptions(
        output_format=OutputFormat.PLAIN if output == "text" else OutputFormat.MARKDOWN,
        exclude_selectors=list(NOISE_SELECTORS),
        extract_metadata=False,
        inline_data_media=InlineDataMedia.ALT_TEXT_ONLY,
        base_url=base_url,
    )
    try:
        return html_to_markdown(text, options).content or ""
    except ConversionError as error:
        raise HtmlConversionError(
            f"Could not convert the HTML of {base_url} ({error})", url=base_url
        ) from error


def _title(text: str) -> str | None:
    match = _TITLE.search(text[:_DETECT_BYTES])
    if not match:
        return None
    title = " ".join(html.unescape(match.group(1)).split())
    return title or None


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
    from charset_normalizer import from_bytes  # ~50 ms to import, and most pages never need it

    matches = from_bytes(body[:_DETECT_BYTES])
    # Detection cannot tell the Western code pages apart on short text (it reads French as
    # Baltic); windows-1252 is the web's legacy default, so it wins whenever it is plausible.
    if any(match.encoding == "cp1252" for match in matches):
        return "cp1252"
    best = matches.best()
    return best.encoding if best else None


__all__ = [
    "NOISE_SELECTORS",
    "ContentKind",
    "ConvertedPage",
    "HtmlConversionError",
    "convert",
    "decode",
    "error_excerpt",
    "error_report",
    "is_html",
    "page_text",
]
