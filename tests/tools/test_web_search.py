from __future__ import annotations

import subprocess
import sys
import threading
from typing import Any

import pytest
from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException
from pydantic import ValidationError

from nestor.tools.base import ToolContext, ToolError
from nestor.tools.catalogue import ToolCatalogue
from nestor.tools.search_backends import (
    DEFAULT_DDGS_BACKENDS,
    DdgsBackend,
    RecordedBackend,
    SearchError,
    SearchHit,
    SearchRateLimited,
    SearchTimedOut,
)
from nestor.tools.web_search import (
    CACHED_NOTE,
    MAX_RESULTS,
    NO_RESULTS_MESSAGE,
    RATE_LIMITED_MESSAGE,
    TIMED_OUT_MESSAGE,
    SearchCache,
    WebSearchParams,
    WebSearchTool,
)

PYTHON_HITS = [
    SearchHit("What's New In Python 3.12", "https://docs.python.org/3/whatsnew/3.12.html", "Release notes."),
    SearchHit(
        "Python 3.12 features", "https://realpython.com/python312/", "A guide to\n  the new  features."
    ),
]


def many_hits(count: int) -> list[SearchHit]:
    return [SearchHit(f"Page {n}", f"https://example.com/{n}", f"Snippet {n}") for n in range(count)]


class FakeDDGS:
    """Stands in for ``ddgs.DDGS``: records each ``text`` call and answers or raises as told."""

    def __init__(self, results: list[dict[str, Any]] | None = None, error: Exception | None = None) -> None:
        self.results = results or []
        self.error = error
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def text(self, query: str, **kwargs: Any) -> list[dict[str, Any]]:
        self.calls.append((query, kwargs))
        if self.error is not None:
            raise self.error
        return self.results


def ddgs_tool(fake: FakeDDGS, **backend_options: Any) -> WebSearchTool:
    return WebSearchTool(backend=DdgsBackend(ddgs_factory=lambda: fake, **backend_options))


async def test_results_are_a_numbered_list_of_title_url_and_summary(ctx: ToolContext) -> None:
    tool = WebSearchTool(backend=RecordedBackend({"python 3.12": PYTHON_HITS}))
    result = await tool.run(WebSearchParams(query="python 3.12"), ctx)
    assert result.content == (
        'Found 2 search results for "python 3.12":\n'
        "\n"
        "1. What's New In Python 3.12\n"
        "   URL: https://docs.python.org/3/whatsnew/3.12.html\n"
        "   Summary: Release notes.\n"
        "\n"
        "2. Python 3.12 features\n"
        "   URL: https://realpython.com/python312/\n"
        "   Summary: A guide to the new features."
    )
    assert not result.is_error
    assert result.metadata["results"] == 2
    assert result.metadata["urls"] == [hit.url for hit in PYTHON_HITS]


async def test_a_hit_without_title_shows_its_url_and_one_without_snippet_no_summary(ctx: ToolContext) -> None:
    hits = [SearchHit("", "https://a.example/", ""), SearchHit("Same page", "https://a.example/", "dup")]
    tool = WebSearchTool(backend=RecordedBackend({"q": hits}))
    result = await tool.run(WebSearchParams(query="q"), ctx)
    assert (
        result.content
        == 'Found 1 search results for "q":\n\n1. https://a.example/\n   URL: https://a.example/'
    )


async def test_long_snippets_are_shortened(ctx: ToolContext) -> None:
    tool = WebSearchTool(
        backend=RecordedBackend({"q": [SearchHit("T", "https://a.example/", "word " * 500)]})
    )
    result = await tool.run(WebSearchParams(query="q"), ctx)
    summary = result.content.splitlines()[-1]
    assert summary.startswith("   Summary: word word")
    assert summary.endswith("…")
    assert len(summary) < 600


async def test_max_results_above_twenty_is_clamped_with_a_note(ctx: ToolContext) -> None:
    backend = RecordedBackend({"q": many_hits(30)})
    result = await WebSearchTool(backend=backend).run(WebSearchParams(query="q", max_results=50), ctx)
    assert backend.calls == [("q", MAX_RESULTS)]
    assert result.content.startswith(f'Found {MAX_RESULTS} search results for "q":')
    assert result.content.endswith("Note: max_results 50 was clamped to the maximum of 20.")


async def test_max_results_up_to_twenty_is_passed_as_asked(ctx: ToolContext) -> None:
    backend = RecordedBackend({"q": many_hits(30)})
    result = await WebSearchTool(backend=backend).run(WebSearchParams(query="q", max_results=20), ctx)
    assert backend.calls == [("q", 20)]
    assert "clamped" not in result.content


async def test_the_tool_default_applies_when_the_call_sets_no_count(ctx: ToolContext) -> None:
    backend = RecordedBackend({"q": many_hits(30)})
    tool = WebSearchTool(backend=backend, default_results=5)
    await tool.run(WebSearchParams(query="q"), ctx)
    await tool.run(WebSearchParams(query="other", max_results=10), ctx)
    assert backend.calls == [("q", 5), ("other", 10)]


async def test_a_tool_default_above_twenty_is_capped(ctx: ToolContext) -> None:
    backend = RecordedBackend({"q": many_hits(30)})
    await WebSearchTool(backend=backend, default_results=50).run(WebSearchParams(query="q"), ctx)
    assert backend.calls == [("q", MAX_RESULTS)]


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_an_empty_query_is_refused(query: str) -> None:
    with pytest.raises(ValidationError, match="query"):
        WebSearchParams(query=query)


def test_a_query_is_stripped_and_its_spacing_collapsed() -> None:
    assert WebSearchParams(query="  rust   async\n traits ").query == "rust async traits"


def test_an_overlong_query_is_refused() -> None:
    with pytest.raises(ValidationError):
        WebSearchParams(query="word " * 200)


def test_max_results_below_one_is_refused() -> None:
    with pytest.raises(ValidationError):
        WebSearchParams(query="q", max_results=0)


async def test_a_repeated_query_is_answered_from_the_cache_with_a_note(ctx: ToolContext) -> None:
    backend = RecordedBackend({"python 3.12": PYTHON_HITS})
    tool = WebSearchTool(backend=backend)
    first = await tool.run(WebSearchParams(query="python 3.12"), ctx)
    again = await tool.run(WebSearchParams(query="Python   3.12"), ctx)
    assert backend.calls == [("python 3.12", 10)]
    assert first.metadata["cached"] is False
    assert again.metadata["cached"] is True
    header = 'Found 2 search results for "python 3.12":'
    assert again.content == first.content.replace(header, header.replace("python", "Python")) + (
        f"\n\n{CACHED_NOTE}"
    )


async def test_a_cached_larger_search_answers_a_smaller_one(ctx: ToolContext) -> None:
    backend = RecordedBackend({"q": many_hits(30)})
    tool = WebSearchTool(backend=backend)
    await tool.run(WebSearchParams(query="q", max_results=20), ctx)
    smaller = await tool.run(WebSearchParams(query="q", max_results=3), ctx)
    larger = await tool.run(WebSearchParams(query="q", max_results=20), ctx)
    assert backend.calls == [("q", 20)]
    assert smaller.metadata["urls"] == [f"https://example.com/{n}" for n in range(3)]
    assert larger.metadata["results"] == 20


async def test_a_smaller_cached_search_does_not_answer_a_larger_one(ctx: ToolContext) -> None:
    backend = RecordedBackend({"q": many_hits(30)})
    tool = WebSearchTool(backend=backend)
    await tool.run(WebSearchParams(query="q", max_results=3), ctx)
    await tool.run(WebSearchParams(query="q", max_results=10), ctx)
    assert backend.calls == [("q", 3), ("q", 10)]


async def test_a_shared_cache_serves_another_tool_instance(ctx: ToolContext) -> None:
    cache = SearchCache()
    backend = RecordedBackend({"q": PYTHON_HITS})
    await WebSearchTool(backend=backend, cache=cache).run(WebSearchParams(query="q"), ctx)
    await WebSearchTool(backend=backend, cache=cache).run(WebSearchParams(query="q"), ctx)
    assert len(backend.calls) == 1


def test_the_cache_drops_the_least_recently_used_search() -> None:
    cache = SearchCache(max_entries=2)
    cache.put("a", 10, PYTHON_HITS)
    cache.put("b", 10, PYTHON_HITS)
    assert cache.get("a", 10) is not None
    cache.put("c", 10, PYTHON_HITS)
    assert cache.get("b", 10) is None
    assert cache.get("a", 10) == PYTHON_HITS
    assert len(cache) == 2


async def test_no_results_gives_the_rephrase_or_retry_message_and_is_not_cached(ctx: ToolContext) -> None:
    backend = RecordedBackend()
    tool = WebSearchTool(backend=backend)
    result = await tool.run(WebSearchParams(query="zxqv"), ctx)
    await tool.run(WebSearchParams(query="zxqv"), ctx)
    assert result.content == NO_RESULTS_MESSAGE
    assert "bot detection" in result.content and "rephrasing" in result.content
    assert not result.is_error
    assert len(backend.calls) == 2


async def test_a_failed_search_is_not_cached(ctx: ToolContext) -> None:
    backend = RecordedBackend({"q": PYTHON_HITS}, errors_by_query={"q": SearchTimedOut("slow")})
    tool = WebSearchTool(backend=backend)
    with pytest.raises(ToolError):
        await tool.run(WebSearchParams(query="q"), ctx)
    del backend.errors_by_query["q"]
    result = await tool.run(WebSearchParams(query="q"), ctx)
    assert result.metadata["cached"] is False
    assert len(backend.calls) == 2


def test_permission_asks_for_network_access_naming_the_query(ctx: ToolContext) -> None:
    request = WebSearchTool(backend=RecordedBackend()).permission(WebSearchParams(query="rust traits"), ctx)
    assert request is not None
    assert request.tool_name == "web_search"
    assert request.action == "network"
    assert request.target == "rust traits"
    assert "rust traits" in request.description
    assert request.grant_key == "*"


def test_the_tool_is_read_only_and_described_from_its_markdown_file() -> None:
    tool = WebSearchTool(backend=RecordedBackend())
    assert ToolCatalogue().has(tool.name, "read_only")
    assert tool.description.startswith("Search the web")
    assert set(tool.parameters_schema()["properties"]) == {"query", "max_results"}


# --- the ddgs back end, through a fake DDGS: never the network ---------------------------------


async def test_ddgs_backend_passes_the_query_count_and_engines_and_maps_results() -> None:
    fake = FakeDDGS(
        [
            {"title": " Asyncio ", "href": "https://docs.python.org/3/library/asyncio.html", "body": "Docs."},
            {"title": "", "href": "https://example.com/no-title", "body": ""},
            {"title": "No URL", "href": "", "body": "dropped"},
        ]
    )
    hits = await DdgsBackend(ddgs_factory=lambda: fake).search("asyncio", 7)
    assert fake.calls == [("asyncio", {"max_results": 7, "backend": DEFAULT_DDGS_BACKENDS})]
    assert DEFAULT_DDGS_BACKENDS.split(",")[0] == "duckduckgo"
    assert hits == [
        SearchHit("Asyncio", "https://docs.python.org/3/library/asyncio.html", "Docs."),
        SearchHit("https://example.com/no-title", "https://example.com/no-title", ""),
    ]


async def test_ddgs_backend_uses_the_engines_it_was_given_and_caps_the_hits() -> None:
    fake = FakeDDGS([{"title": f"T{n}", "href": f"https://e.example/{n}", "body": ""} for n in range(5)])
    hits = await DdgsBackend("mojeek,brave", ddgs_factory=lambda: fake).search("q", 2)
    assert fake.calls[0][1]["backend"] == "mojeek,brave"
    assert [hit.url for hit in hits] == ["https://e.example/0", "https://e.example/1"]


async def test_ddgs_results_reach_the_model_formatted(ctx: ToolContext) -> None:
    fake = FakeDDGS([{"title": "Asyncio", "href": "https://docs.python.org/3/", "body": "Docs."}])
    result = await ddgs_tool(fake).run(WebSearchParams(query="asyncio", max_results=3), ctx)
    assert fake.calls[0][1]["max_results"] == 3
    assert "1. Asyncio\n   URL: https://docs.python.org/3/\n   Summary: Docs." in result.content


async def test_ddgs_rate_limit_tells_the_model_to_wait_or_fetch(ctx: ToolContext) -> None:
    tool = ddgs_tool(FakeDDGS(error=RatelimitException("202 Ratelimit")))
    with pytest.raises(ToolError) as raised:
        await tool.run(WebSearchParams(query="q"), ctx)
    assert str(raised.value) == RATE_LIMITED_MESSAGE
    assert "rate limiting" in str(raised.value) and "web_fetch" in str(raised.value)


async def test_ddgs_timeout_is_a_clear_timeout_message(ctx: ToolContext) -> None:
    tool = ddgs_tool(FakeDDGS(error=TimeoutException("request timed out")))
    with pytest.raises(ToolError) as raised:
        await tool.run(WebSearchParams(query="q"), ctx)
    assert str(raised.value) == TIMED_OUT_MESSAGE


async def test_ddgs_no_results_exception_is_the_no_results_message(ctx: ToolContext) -> None:
    result = await ddgs_tool(FakeDDGS(error=DDGSException("No results found."))).run(
        WebSearchParams(query="q"), ctx
    )
    assert result.content == NO_RESULTS_MESSAGE
    assert not result.is_error


async def test_other_ddgs_failures_give_the_no_results_message_and_the_cause(ctx: ToolContext) -> None:
    tool = ddgs_tool(FakeDDGS(error=DDGSException("ConnectError: dns failure")))
    with pytest.raises(ToolError) as raised:
        await tool.run(WebSearchParams(query="q"), ctx)
    assert str(raised.value).startswith(NO_RESULTS_MESSAGE)
    assert "ConnectError: dns failure" in str(raised.value)


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (RatelimitException("slow down"), SearchRateLimited),
        (TimeoutException("timed out"), SearchTimedOut),
        (DDGSException("boom"), SearchError),
    ],
)
async def test_ddgs_backend_maps_ddgs_exceptions(error: Exception, expected: type[SearchError]) -> None:
    with pytest.raises(expected) as raised:
        await DdgsBackend(ddgs_factory=lambda: FakeDDGS(error=error)).search("q", 5)
    assert type(raised.value) is expected
    assert raised.value.__cause__ is error


async def test_ddgs_backend_gives_up_waiting_at_its_deadline() -> None:
    release = threading.Event()

    class StuckDDGS(FakeDDGS):
        def text(self, query: str, **kwargs: Any) -> list[dict[str, Any]]:
            release.wait(timeout=10)
            return []

    try:
        with pytest.raises(SearchTimedOut):
            await DdgsBackend(deadline=0.05, ddgs_factory=StuckDDGS).search("q", 5)
    finally:
        release.set()


def test_importing_the_tool_does_not_import_ddgs() -> None:
    code = "import sys, nestor.tools.web_search; print(any(m.split('.')[0] == 'ddgs' for m in sys.modules))"
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "False"
