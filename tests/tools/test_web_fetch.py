from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from nestor.tools.base import ToolContext, ToolError
from nestor.tools.catalogue import ToolCatalogue
from nestor.tools.web.cache import WebCache
from nestor.tools.web.client import SafeHttpClient
from nestor.tools.web_fetch import (
    CACHED_NOTE,
    LARGE_CONTENT_BYTES,
    WebFetchParams,
    WebFetchTool,
    file_name_for,
)
from tests.tools.web.server import HUGE_SECTIONS, LOOPBACK, NOISE, WebServer, serve


@pytest.fixture(scope="module")
def server() -> Iterator[WebServer]:
    with serve() as running:
        yield running


@pytest.fixture
async def client() -> AsyncIterator[SafeHttpClient]:
    async with SafeHttpClient(LOOPBACK) as safe:
        yield safe


@pytest.fixture
def tool(client: SafeHttpClient) -> WebFetchTool:
    return WebFetchTool(client=client)


@pytest.fixture
def scratch_ctx(ctx: ToolContext, tmp_path: Path) -> ToolContext:
    ctx.scratch_dir = tmp_path / "scratch"
    return ctx


async def web_fetch(tool: WebFetchTool, url: str, ctx: ToolContext):
    return await tool.run(WebFetchParams(url=url), ctx)


async def test_a_page_under_50_kb_is_returned_inline(
    server: WebServer, tool: WebFetchTool, ctx: ToolContext
) -> None:
    result = await web_fetch(tool, server.url("/article.html"), ctx)

    assert not result.is_error
    assert result.content.startswith("# Release notes")
    for noise in NOISE:
        assert noise not in result.content
    assert result.metadata["title"] == "Release notes & migration guide"
    assert result.metadata["saved_path"] is None
    assert result.metadata["cached"] is False


async def test_a_page_over_50_kb_is_saved_to_the_scratch_dir(
    server: WebServer, tool: WebFetchTool, scratch_ctx: ToolContext
) -> None:
    url = server.url("/huge.html")
    result = await web_fetch(tool, url, scratch_ctx)

    saved = Path(result.metadata["saved_path"])
    text = await asyncio.to_thread(saved.read_text, encoding="utf-8")
    assert saved.parent == (scratch_ctx.scratch_dir or Path()) / "web"
    assert saved.name == file_name_for(url, "markdown")
    assert len(text.encode()) == result.metadata["bytes"] > LARGE_CONTENT_BYTES
    assert f"## Function number {HUGE_SECTIONS - 1}" in text
    assert "FOOTER-NOISE" not in text
    assert "Function number" not in result.content
    assert str(saved) in result.content
    assert f"{result.metadata['bytes']:,} bytes of markdown" in result.content
    assert '"Full reference"' in result.content
    assert "Use view" in result.content
    assert "grep" in result.content


async def test_without_a_scratch_dir_large_pages_go_to_a_temp_dir(
    server: WebServer, tool: WebFetchTool, ctx: ToolContext
) -> None:
    result = await web_fetch(tool, server.url("/huge.html"), ctx)

    saved = Path(result.metadata["saved_path"])
    try:
        assert await asyncio.to_thread(saved.is_file)
        assert saved.parent.name.startswith("nestor-web-")
        assert not saved.is_relative_to(ctx.project_root)
    finally:
        shutil.rmtree(saved.parent)


async def test_a_second_fetch_of_a_url_returns_the_cached_copy(
    server: WebServer, tool: WebFetchTool, ctx: ToolContext
) -> None:
    url = server.url("/article.html")
    first = await web_fetch(tool, url, ctx)
    hits = server.state.hits["/article.html"]

    second = await web_fetch(tool, url + "#breaking-changes", ctx)

    assert server.state.hits["/article.html"] == hits
    assert second.content == f"{CACHED_NOTE}\n\n{first.content}"
    assert second.metadata["cached"] is True
    assert tool.cache.visited == (url, url + "#breaking-changes")


async def test_a_cache_is_per_tool_unless_shared(
    server: WebServer, client: SafeHttpClient, ctx: ToolContext
) -> None:
    shared = WebCache()
    url = server.url("/data.json")
    await web_fetch(WebFetchTool(client, shared), url, ctx)

    again = await web_fetch(WebFetchTool(client, shared), url, ctx)
    fresh = await web_fetch(WebFetchTool(client), url, ctx)

    assert again.content.startswith(CACHED_NOTE)
    assert not fresh.content.startswith(CACHED_NOTE)


async def test_the_target_of_a_redirect_is_cached_too(
    server: WebServer, tool: WebFetchTool, ctx: ToolContext
) -> None:
    redirected = await web_fetch(tool, server.url("/redirect/2"), ctx)
    target = await web_fetch(tool, server.url("/redirect/0"), ctx)

    assert redirected.content == f"Redirected to {server.url('/redirect/0')}\n\narrived"
    assert target.content.startswith(CACHED_NOTE)


async def test_binary_content_is_refused(server: WebServer, tool: WebFetchTool, ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="image/png"):
        await web_fetch(tool, server.url("/image.png"), ctx)


async def test_an_error_status_is_an_error_result(
    server: WebServer, tool: WebFetchTool, ctx: ToolContext
) -> None:
    result = await web_fetch(tool, server.url("/missing"), ctx)

    assert result.is_error
    assert (
        result.content == f"HTTP 404 Not Found from {server.url('/missing')}\n\n# Not Found\n\nNo such page."
    )
    assert result.metadata["status"] == 404


async def test_the_default_client_refuses_local_addresses(server: WebServer, ctx: ToolContext) -> None:
    tool = WebFetchTool()
    try:
        with pytest.raises(ToolError, match=r"127\.0\.0\.1 is a loopback address"):
            await web_fetch(tool, server.url("/article.html"), ctx)
    finally:
        await tool.client.aclose()


def test_permission_asks_for_network_access_to_the_origin(ctx: ToolContext) -> None:
    tool = WebFetchTool()
    request = tool.permission(WebFetchParams(url="https://Docs.Example.com/a?q=1"), ctx)

    assert request is not None
    assert request.tool_name == "web_fetch"
    assert request.action == "network"
    assert request.target == "https://Docs.Example.com/a?q=1"
    assert request.grant_key == "https://docs.example.com"
    assert ToolCatalogue().has(tool.name, "read_only")


def test_description_and_parameters() -> None:
    tool = WebFetchTool()

    assert tool.name == "web_fetch"
    assert "50 KB" in tool.description
    assert tool.parameters_schema()["required"] == ["url"]
    assert list(tool.parameters_schema()["properties"]) == ["url"]


@pytest.mark.parametrize(
    ("url", "kind", "prefix", "suffix"),
    [
        (
            "https://docs.python.org/3/whatsnew/3.12.html",
            "markdown",
            "docs.python.org-3-whatsnew-3.12.html-",
            ".md",
        ),
        ("http://api.test/v1/items?page=2#top", "json", "api.test-v1-items-page-2-", ".json"),
        ("https://x.test/", "text", "x.test-", ".txt"),
    ],
)
def test_saved_files_are_named_after_the_url(url: str, kind: str, prefix: str, suffix: str) -> None:
    name = file_name_for(url, kind)

    assert name.startswith(prefix)
    assert name.endswith(suffix)
    assert file_name_for(url + "x", kind) != name
    assert len(file_name_for("https://long.test/" + "a" * 500, kind)) < 100
