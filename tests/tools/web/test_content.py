from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import pytest

from nestor.tools.web.client import SafeHttpClient
from nestor.tools.web.content import (
    ConvertedPage,
    HtmlConversionError,
    convert,
    decode,
    error_excerpt,
    error_report,
    page_text,
)
from nestor.tools.web.pages import FetchedPage, FetchError
from tests.tools.web.server import FRENCH, JSON_DATA, LOOPBACK, NOISE, WebServer, serve


@pytest.fixture(scope="module")
def server() -> Iterator[WebServer]:
    with serve() as running:
        yield running


@pytest.fixture
async def client() -> AsyncIterator[SafeHttpClient]:
    async with SafeHttpClient(LOOPBACK) as safe:
        yield safe


def page(
    body: bytes, content_type: str, *, url: str = "http://site.test/p", status: int = 200
) -> FetchedPage:
    return FetchedPage(url, status, content_type, body)


async def test_a_real_world_page_loses_its_furniture(server: WebServer, client: SafeHttpClient) -> None:
    converted = convert(await client.get(server.url("/article.html")))

    assert converted.kind == "markdown"
    assert converted.title == "Release notes & migration guide"
    assert "# Release notes" in converted.text
    assert "- Python 3.11 is required\n- Configuration moved to TOML" in converted.text
    assert "pip install example==3.0" in converted.text
    assert f"[migration guide]({server.url('/docs/migrate')})" in converted.text
    for noise in NOISE:
        assert noise not in converted.text
    assert len(converted.text) < 2_000


async def test_plain_text_output_has_no_markdown(server: WebServer, client: SafeHttpClient) -> None:
    converted = convert(await client.get(server.url("/article.html")), "text")

    assert converted.kind == "text"
    assert "Release notes" in converted.text
    assert "# Release notes" not in converted.text
    assert "FOOTER-NOISE" not in converted.text


async def test_json_is_pretty_printed(server: WebServer, client: SafeHttpClient) -> None:
    converted = convert(await client.get(server.url("/data.json")))

    assert converted == ConvertedPage(json.dumps(JSON_DATA, indent=2), "json", None)


async def test_declared_latin1_charset_is_used(server: WebServer, client: SafeHttpClient) -> None:
    converted = convert(await client.get(server.url("/latin1.html")))

    assert converted.text.strip() == FRENCH
    assert converted.title == "Café"


async def test_meta_charset_is_used_when_the_header_has_none(
    server: WebServer, client: SafeHttpClient
) -> None:
    converted = convert(await client.get(server.url("/meta-charset.html")))

    assert converted.text.strip() == "Prix : 5 €"


def test_undeclared_non_utf8_text_is_detected() -> None:
    converted = convert(page((FRENCH * 20).encode("latin-1"), "text/plain"))

    assert converted.text.startswith("Le café crème coûte très cher")
    assert "\ufffd" not in converted.text


def test_latin1_label_is_read_as_windows_1252_like_browsers() -> None:
    assert decode(b"5 \x80", "iso-8859-1") == "5 €"


def test_a_body_cut_inside_a_character_decodes_without_replacement() -> None:
    body = "naïve café".encode()[:-1]

    assert decode(body, None, truncated=True) == "naïve caf"


def test_invalid_json_is_returned_as_text() -> None:
    assert convert(page(b"{not json", "application/json")) == ConvertedPage("{not json", "text", None)


def test_markdown_is_returned_as_markdown() -> None:
    assert convert(page(b"# Title\n\ntext", "text/markdown")).kind == "markdown"


def test_html_without_a_declared_type_is_sniffed() -> None:
    converted = convert(page(b"<!doctype html><html><body><h2>Sniffed</h2></body></html>", ""))

    assert converted.text.strip() == "## Sniffed"


def test_binary_content_is_refused_naming_its_type() -> None:
    with pytest.raises(FetchError, match=r"binary content of type image/png from http://site\.test/p"):
        convert(page(b"\x89PNG\r\n\x1a\n", "image/png"))


def test_binary_body_without_a_content_type_is_refused() -> None:
    with pytest.raises(FetchError, match=r"binary content \(no content type declared\)"):
        page_text(page(b"\x00\x01\x02" * 10, ""))


def test_unconvertible_html_is_a_conversion_error() -> None:
    with pytest.raises(HtmlConversionError, match=r"Could not convert the HTML of http://site\.test/p"):
        convert(page(b"\x00" * 200, "text/html"))


def test_error_report_shows_status_url_and_the_start_of_the_page() -> None:
    missing = page(b"<html><body><h1>Gone</h1><p>Moved away.</p></body></html>", "text/html", status=410)

    assert error_report(missing) == "HTTP 410 Gone from http://site.test/p\n\n# Gone\n\nMoved away."


def test_error_report_of_a_binary_page_is_the_status_line_only() -> None:
    broken = page(b"", "image/png", status=500)

    assert error_report(broken) == "HTTP 500 Internal Server Error from http://site.test/p"
    assert error_excerpt(broken) == ""
