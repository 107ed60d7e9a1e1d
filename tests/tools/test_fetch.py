from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from pydantic import ValidationError

from nestor.tools.base import ToolContext, ToolError
from nestor.tools.catalogue import ToolCatalogue
from nestor.tools.fetch import (
    MAX_BODY_BYTES,
    MAX_TIMEOUT_SECONDS,
    USER_AGENT,
    FetchParams,
    FetchTool,
)
from nestor.tools.web.addresses import AddressPolicy
from nestor.tools.web.cache import WebCache
from nestor.tools.web.client import SafeHttpClient
from nestor.tools.web.saved import LARGE_CONTENT_BYTES, file_name_for
from nestor.tools.web_fetch import CACHED_NOTE, WebFetchParams, WebFetchTool
from tests.tools.web.server import WebServer, serve

LOOPBACK = AddressPolicy(allow_networks=("127.0.0.1/32",))
"""The test server lives on loopback, which nestor refuses unless allowed."""

NOISY_PAGE = """<!doctype html>
<html><head><title>Docs</title><style>body { color: red }</style>
<script>var tracking = "SCRIPT-NOISE";</script></head>
<body>
<header><div>HEADER-NOISE</div></header>
<nav><a href="/home">NAV-NOISE</a></nav>
<main>
  <h1>Main Title</h1>
  <p>Read the <a href="/guide/start">guide</a> first.</p>
  <ul><li>first item</li><li>second item</li></ul>
  <iframe src="/ad">IFRAME-NOISE</iframe>
  <svg><text>SVG-NOISE</text></svg>
  <noscript>NOSCRIPT-NOISE</noscript>
</main>
<aside>ASIDE-NOISE</aside>
<footer>FOOTER-NOISE</footer>
<script>console.log("SCRIPT-NOISE-2")</script>
</body></html>
"""
NOISE = ["SCRIPT-NOISE", "HEADER-NOISE", "NAV-NOISE", "IFRAME-NOISE", "SVG-NOISE", "NOSCRIPT-NOISE"]
NOISE += ["ASIDE-NOISE", "FOOTER-NOISE", "color: red"]

JSON_DATA = {"name": "nestor", "tags": ["cli", "agents"], "nested": {"ok": True}}
FRENCH = "Le café crème coûte très cher à la fenêtre de la rue. Déjà vu, où êtes-vous allé ? Ça été é."
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
HUGE_BODY_BYTES = MAX_BODY_BYTES + 1024 * 1024


class Handler(BaseHTTPRequestHandler):
    release: threading.Event

    def log_message(self, format: str, *args: object) -> None:
        return None

    def reply(self, body: bytes, content_type: str | None, status: int = 200) -> None:
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        # The client stops reading past its cap, as it should.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)

    def do_GET(self) -> None:
        path = self.path
        if path == "/page.html":
            self.reply(NOISY_PAGE.encode(), "text/html; charset=utf-8")
        elif path == "/data.json":
            self.reply(json.dumps(JSON_DATA).encode(), "application/json")
        elif path == "/latin1.txt":
            self.reply(FRENCH.encode("latin-1"), "text/plain; charset=iso-8859-1")
        elif path == "/latin1-euro.txt":
            self.reply(b"5 \x80", "text/plain; charset=iso-8859-1")
        elif path == "/meta-charset.html":
            body = '<html><head><meta charset="iso-8859-15"></head><body><p>Prix : 5 €</p></body></html>'
            self.reply(body.encode("iso-8859-15"), "text/html")
        elif path == "/undeclared.txt":
            self.reply((FRENCH * 20).encode("latin-1"), "text/plain")
        elif path == "/image.png":
            self.reply(PNG, "image/png")
        elif path == "/no-type":
            self.reply(PNG, None)
        elif path == "/nul.html":
            self.reply(b"\x00" * 200, "text/html")
        elif path == "/missing":
            self.reply(b"<html><body><h1>Not Found</h1><p>No such page.</p></body></html>", "text/html", 404)
        elif path == "/broken-image":
            self.reply(PNG, "image/png", 500)
        elif path.startswith("/redirect/"):
            remaining = int(path.rsplit("/", 1)[1])
            if remaining == 0:
                self.reply(b"arrived", "text/plain")
            else:
                self.send_response(302)
                self.send_header("Location", f"/redirect/{remaining - 1}")
                self.send_header("Content-Length", "0")
                self.end_headers()
        elif path == "/huge.txt":
            self.reply(b"a" * HUGE_BODY_BYTES, "text/plain")
        elif path == "/long.txt":
            self.reply(b"b" * 150_000, "text/plain")
        elif path == "/agent":
            self.reply(self.headers.get("User-Agent", "").encode(), "text/plain")
        elif path == "/slow":
            self.release.wait(30)
            self.reply(b"too late", "text/plain")
        else:
            self.reply(b"unknown route", "text/plain", 404)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    release = threading.Event()
    handler = type("BoundHandler", (Handler,), {"release": release})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        release.set()
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(project_root=tmp_path)


async def fetch(url: str, ctx: ToolContext, tool: FetchTool | None = None, **params: object):
    arguments = FetchParams.model_validate({"url": url, **params})
    if tool is not None:
        return await tool.run(arguments, ctx)
    async with SafeHttpClient(LOOPBACK) as client:
        return await FetchTool(client=client).run(arguments, ctx)


async def test_html_becomes_markdown_without_page_furniture(server: str, ctx: ToolContext) -> None:
    result = await fetch(f"{server}/page.html", ctx)

    assert not result.is_error
    assert "# Main Title" in result.content
    assert "- first item\n- second item" in result.content
    for noise in NOISE:
        assert noise not in result.content
    assert result.metadata["content_type"] == "text/html"


async def test_relative_links_are_made_absolute(server: str, ctx: ToolContext) -> None:
    result = await fetch(f"{server}/page.html", ctx)

    assert f"[guide]({server}/guide/start)" in result.content


async def test_text_format_returns_plain_text(server: str, ctx: ToolContext) -> None:
    result = await fetch(f"{server}/page.html", ctx, format="text")

    assert "Main Title" in result.content
    assert "# Main Title" not in result.content
    assert "first item" in result.content
    assert "FOOTER-NOISE" not in result.content


async def test_html_format_returns_the_raw_page(server: str, ctx: ToolContext) -> None:
    result = await fetch(f"{server}/page.html", ctx, format="html")

    assert result.content == NOISY_PAGE


async def test_json_is_pretty_printed(server: str, ctx: ToolContext) -> None:
    result = await fetch(f"{server}/data.json", ctx)

    assert result.content == json.dumps(JSON_DATA, indent=2)


async def test_declared_latin1_charset_is_used(server: str, ctx: ToolContext) -> None:
    result = await fetch(f"{server}/latin1.txt", ctx)

    assert result.content == FRENCH


async def test_latin1_label_is_read_as_windows_1252_like_browsers(server: str, ctx: ToolContext) -> None:
    result = await fetch(f"{server}/latin1-euro.txt", ctx)

    assert result.content == "5 €"


async def test_html_meta_charset_is_used_when_the_header_has_none(server: str, ctx: ToolContext) -> None:
    result = await fetch(f"{server}/meta-charset.html", ctx)

    assert result.content.strip() == "Prix : 5 €"


async def test_undeclared_non_utf8_charset_is_detected(server: str, ctx: ToolContext) -> None:
    result = await fetch(f"{server}/undeclared.txt", ctx)

    assert "Le café crème coûte très cher" in result.content
    assert "\ufffd" not in result.content


async def test_binary_content_type_is_refused_naming_the_type(server: str, ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="image/png"):
        await fetch(f"{server}/image.png", ctx)


async def test_binary_body_without_content_type_is_refused(server: str, ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="binary content"):
        await fetch(f"{server}/no-type", ctx)


async def test_unconvertible_html_is_a_clear_error(server: str, ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match='format "html"'):
        await fetch(f"{server}/nul.html", ctx)


async def test_non_2xx_status_is_an_error_result_with_the_code(server: str, ctx: ToolContext) -> None:
    result = await fetch(f"{server}/missing", ctx)

    assert result.is_error
    assert result.content.startswith(f"HTTP 404 Not Found from {server}/missing")
    assert "No such page." in result.content
    assert result.metadata["status"] == 404


async def test_non_2xx_binary_body_is_not_shown(server: str, ctx: ToolContext) -> None:
    result = await fetch(f"{server}/broken-image", ctx)

    assert result.is_error
    assert result.content == f"HTTP 500 Internal Server Error from {server}/broken-image"


async def test_follows_a_chain_of_three_redirects(server: str, ctx: ToolContext) -> None:
    result = await fetch(f"{server}/redirect/3", ctx)

    assert not result.is_error
    assert result.content == f"Redirected to {server}/redirect/0\n\narrived"
    assert result.metadata["final_url"] == f"{server}/redirect/0"


async def test_no_redirect_note_when_only_the_spelling_of_the_url_changes(
    server: str, ctx: ToolContext
) -> None:
    result = await fetch(f"{server}/redirect/0".replace("http://", "HTTP://"), ctx)

    assert result.content == "arrived"


async def test_refuses_more_than_five_redirects(server: str, ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="redirected more than 5 times"):
        await fetch(f"{server}/redirect/7", ctx)


async def test_body_over_the_cap_is_truncated_with_a_note(server: str, ctx: ToolContext) -> None:
    result = await fetch(f"{server}/huge.txt", ctx)

    assert not result.is_error
    assert result.metadata["bytes"] == MAX_BODY_BYTES
    assert result.metadata["body_truncated"] is True
    assert "[Body truncated: only the first 5 MB were read.]" in result.content


async def test_long_content_goes_to_a_file_not_into_the_result(
    server: str, ctx: ToolContext, tmp_path: Path
) -> None:
    ctx.scratch_dir = tmp_path / "scratch"
    result = await fetch(f"{server}/long.txt", ctx)

    saved = Path(result.metadata["saved_path"])
    assert result.content.startswith(f"The page at {server}/long.txt is 150,000 bytes of text")
    assert "b" * 100 not in result.content
    assert await asyncio.to_thread(saved.read_text) == "b" * 150_000


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("file:///etc/passwd", "not the file: scheme"),
        ("ftp://127.0.0.1/file", "not the ftp: scheme"),
        ("example.com/page", "without a scheme"),
        ("http:///no-host", "no host"),
    ],
)
async def test_non_http_urls_are_refused(url: str, message: str, ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=message):
        await fetch(url, ctx)


async def test_timeout_is_a_clear_error(server: str, ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="timed out after 1 s"):
        await fetch(f"{server}/slow", ctx, timeout=1)


async def test_connection_failure_is_a_clear_error(ctx: ToolContext) -> None:
    # Port 9 (discard) on loopback is closed here; nothing leaves the machine.
    with pytest.raises(ToolError, match=r"Fetching http://127\.0\.0\.1:9/ failed"):
        await fetch("http://127.0.0.1:9/", ctx)


async def test_timeout_above_the_maximum_is_clamped_with_a_note(server: str, ctx: ToolContext) -> None:
    result = await fetch(f"{server}/redirect/0", ctx, timeout=MAX_TIMEOUT_SECONDS + 1)

    assert result.content.startswith("arrived")
    assert f"clamped to the maximum of {MAX_TIMEOUT_SECONDS} s" in result.content


def test_timeout_below_one_second_is_rejected() -> None:
    with pytest.raises(ValidationError):
        FetchParams.model_validate({"url": "http://127.0.0.1/", "timeout": 0})


async def test_default_client_sends_a_browser_user_agent(server: str, ctx: ToolContext) -> None:
    result = await fetch(f"{server}/agent", ctx)

    assert result.content == USER_AGENT
    assert result.content.startswith("Mozilla/5.0")


async def test_default_client_ignores_proxy_variables(
    server: str, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)

    result = await fetch(f"{server}/redirect/0", ctx)

    assert result.content == "arrived"


async def test_injected_client_is_used(server: str, ctx: ToolContext) -> None:
    async with SafeHttpClient(LOOPBACK, user_agent="probe") as client:
        result = await fetch(f"{server}/agent", ctx, tool=FetchTool(client=client))

    assert result.content == "probe"


async def test_default_client_refuses_local_addresses(server: str, ctx: ToolContext) -> None:
    tool = FetchTool()
    try:
        with pytest.raises(ToolError, match=r"127\.0\.0\.1 is a loopback address.*allow_ranges"):
            await fetch(f"{server}/page.html", ctx, tool=tool)
    finally:
        await tool.client.aclose()


def test_permission_asks_for_network_access_to_the_origin(ctx: ToolContext) -> None:
    tool = FetchTool()
    request = tool.permission(FetchParams(url="https://Docs.Example.com/a/b?q=1"), ctx)

    assert request is not None
    assert request.tool_name == "fetch"
    assert request.action == "network"
    assert request.target == "https://Docs.Example.com/a/b?q=1"
    assert request.description == "Fetch https://Docs.Example.com/a/b?q=1"
    assert request.grant_key == "https://docs.example.com"
    assert ToolCatalogue().has(tool.name, "read_only")


@pytest.mark.parametrize(
    ("url", "grant_key"),
    [
        ("http://127.0.0.1:8080/x", "http://127.0.0.1:8080"),
        ("http://user:secret@host.test/x", "http://host.test"),
        ("http://[::1]:81/", "http://[::1]:81"),
        ("http://host.test:notaport/", "http://host.test:notaport/"),
    ],
)
def test_permission_grant_key_is_scheme_host_and_port(url: str, grant_key: str, ctx: ToolContext) -> None:
    request = FetchTool().permission(FetchParams(url=url), ctx)

    assert request is not None
    assert request.grant_key == grant_key


def test_description_is_read_from_the_markdown_file() -> None:
    tool = FetchTool()

    assert tool.name == "fetch"
    assert "http" in tool.description
    assert tool.parameters_schema()["required"] == ["url"]


# -- one cache and one large-page rule with web_fetch ------------------------------------------


@pytest.fixture(scope="module")
def web_server() -> Iterator[WebServer]:
    with serve() as running:
        yield running


async def test_a_url_fetched_twice_is_downloaded_once(
    web_server: WebServer, ctx: ToolContext, tmp_path: Path
) -> None:
    ctx.scratch_dir = tmp_path / "scratch"
    url = web_server.url("/article.html")
    async with SafeHttpClient(LOOPBACK) as client:
        tool = FetchTool(client=client)
        first = await tool.run(FetchParams(url=url), ctx)
        hits = web_server.state.hits["/article.html"]
        second = await tool.run(FetchParams(url=url), ctx)
        raw = await tool.run(FetchParams(url=url, format="html"), ctx)

    assert web_server.state.hits["/article.html"] == hits + 1  # only the other format is fetched again
    assert second.content == f"{CACHED_NOTE}\n\n{first.content}"
    assert second.metadata["cached"] is True
    assert raw.metadata["cached"] is False
    assert raw.metadata["saved_path"] != first.metadata["saved_path"]


async def test_fetch_and_web_fetch_share_the_session_cache(web_server: WebServer, ctx: ToolContext) -> None:
    url = web_server.url("/data.json")
    shared = WebCache()
    async with SafeHttpClient(LOOPBACK) as client:
        await WebFetchTool(client, shared).run(WebFetchParams(url=url), ctx)
        hits = web_server.state.hits["/data.json"]
        result = await FetchTool(client=client, cache=shared).run(FetchParams(url=url), ctx)

    assert web_server.state.hits["/data.json"] == hits
    assert result.content.startswith(CACHED_NOTE)


async def test_a_client_and_cache_given_as_makers_are_made_on_the_first_fetch_and_shared(
    web_server: WebServer, ctx: ToolContext
) -> None:
    # An agent that never fetches builds no client and no cache (issue 32's prompt walk).
    url = web_server.url("/data.json")
    made: list[str] = []
    shared = WebCache()
    async with SafeHttpClient(LOOPBACK) as client:

        def make_client() -> SafeHttpClient:
            made.append("client")
            return client

        def session_cache() -> WebCache:
            made.append("cache")
            return shared

        fetch_tool = FetchTool(client=make_client, cache=session_cache)
        web_fetch_tool = WebFetchTool(make_client, session_cache)
        assert made == []
        await web_fetch_tool.run(WebFetchParams(url=url), ctx)
        hits = web_server.state.hits["/data.json"]
        result = await fetch_tool.run(FetchParams(url=url), ctx)
        await fetch_tool.run(FetchParams(url=url), ctx)

    assert web_server.state.hits["/data.json"] == hits  # the page web_fetch cached
    assert result.content.startswith(CACHED_NOTE)
    assert sorted(made) == ["cache", "cache", "client", "client"]  # once per tool


async def test_a_page_over_50_kb_is_saved_to_a_file_as_web_fetch_does(
    web_server: WebServer, ctx: ToolContext, tmp_path: Path
) -> None:
    ctx.scratch_dir = tmp_path / "scratch"
    url = web_server.url("/huge.html")
    async with SafeHttpClient(LOOPBACK) as client:
        result = await FetchTool(client=client).run(FetchParams(url=url), ctx)

    saved = Path(result.metadata["saved_path"])
    assert saved.parent == ctx.scratch_dir / "web"
    assert saved.name == file_name_for(url, "markdown")
    assert result.metadata["bytes"] > LARGE_CONTENT_BYTES
    assert f"it was saved to {saved}" in result.content
    assert "Function number" not in result.content
