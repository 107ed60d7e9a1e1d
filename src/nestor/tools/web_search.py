"""The ``web_search`` tool: search the web and return a numbered list of titles, URLs and snippets.

The search itself is a :class:`~nestor.tools.search_backends.SearchBackend` (ddgs by default, so
DuckDuckGo first with other engines as fallback). Results are cached per tool instance, which the
runtime makes per agent, so a repeated query costs no second request and tells the model it
already has those results. How many searches an agent may make is the runtime's business
(``SearchBudgetHook``), not this tool's.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import ClassVar

from pydantic import BaseModel, Field, field_validator

from nestor.tools.base import PermissionRequest, Tool, ToolContext, ToolError, ToolResult
from nestor.tools.search_backends import (
    DdgsBackend,
    SearchBackend,
    SearchError,
    SearchHit,
    SearchRateLimited,
    SearchTimedOut,
)

DEFAULT_RESULTS = 10
MAX_RESULTS = 20
MAX_QUERY_CHARS = 500
MAX_TITLE_CHARS = 200
MAX_SNIPPET_CHARS = 500
CACHE_ENTRIES = 128

NO_RESULTS_MESSAGE = (
    "No results were found for your search query. This could be due to the search engine's bot "
    "detection or the query returned no matches. Please try rephrasing your search or try again "
    "in a few minutes."
)
RATE_LIMITED_MESSAGE = (
    "The search engine is rate limiting nestor, so this search was not made. Wait a minute before "
    "searching again, or use web_fetch on a URL you already know."
)
TIMED_OUT_MESSAGE = (
    "The search engine did not answer in time. Try again in a moment, or use web_fetch on a URL you "
    "already know."
)
CACHED_NOTE = (
    "Note: you already ran this search in this session; these are the same results as before. "
    "Rephrase the query for different results, or fetch one of the URLs."
)

_WHITESPACE = re.compile(r"\s+")


class WebSearchParams(BaseModel):
    """Parameters of the ``web_search`` tool."""

    query: str = Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="What to search for: keywords work best, as you would type them into a search engine.",
    )
    max_results: int = Field(
        default=DEFAULT_RESULTS,
        ge=1,
        description=f"How many results to return (default {DEFAULT_RESULTS}, max {MAX_RESULTS}).",
    )

    @field_validator("query")
    @classmethod
    def _query_has_words(cls, value: str) -> str:
        query = " ".join(value.split())
        if not query:
            raise ValueError("the query is empty: give the words to search for")
        return query


def normalise_query(query: str) -> str:
    """The cache key of a query: case and spacing do not make a different search."""
    return " ".join(query.split()).casefold()


class SearchCache:
    """Search results already fetched, by normalised query and result count, newest kept.

    A lookup for ``n`` results is also answered by a cached search for more than ``n``: its first
    ``n`` hits are what the engine would have ranked first.

    Args:
        max_entries: Searches kept; the least recently used is dropped past it.

    """

    def __init__(self, max_entries: int = CACHE_ENTRIES) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, int], list[SearchHit]] = OrderedDict()

    def get(self, query: str, max_results: int) -> list[SearchHit] | None:
        """The cached hits of ``query`` (at most ``max_results``), or None when it was not searched."""
        normalised = normalise_query(query)
        key: tuple[str, int] | None = (normalised, max_results)
        if key not in self._entries:
            key = next((k for k in self._entries if k[0] == normalised and k[1] > max_results), None)
            if key is None:
                return None
        self._entries.move_to_end(key)
        return list(self._entries[key][:max_results])

    def put(self, query: str, max_results: int, hits: list[SearchHit]) -> None:
        """Remember the hits of a search of ``query`` for ``max_results`` results."""
        key = (normalise_query(query), max_results)
        self._entries[key] = list(hits)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


class WebSearchTool(Tool[WebSearchParams]):
    """Searches the web and lists the results as title, URL and summary.

    Args:
        backend: Where results come from; :class:`DdgsBackend` when not given.
        cache: The results already fetched; a fresh :class:`SearchCache` when not given (pass one
            to share it between tool instances).
        default_results: Results returned when the call does not set ``max_results`` (the
            ``[web] search_results`` setting); capped at :data:`MAX_RESULTS`.

    """

    name: ClassVar[str] = "web_search"
    params_model: ClassVar[type[BaseModel]] = WebSearchParams

    def __init__(
        self,
        backend: SearchBackend | None = None,
        cache: SearchCache | None = None,
        default_results: int = DEFAULT_RESULTS,
    ) -> None:
        self._backend: SearchBackend = backend if backend is not None else DdgsBackend()
        self._cache = cache if cache is not None else SearchCache()
        self._default_results = max(1, min(default_results, MAX_RESULTS))

    def permission(self, params: WebSearchParams, ctx: ToolContext) -> PermissionRequest | None:
        """A search goes to an outside engine: network access needs the user's approval.

        Rules match the query; "allow for this session" covers every search, since they all go to
        the same engines.
        """
        return PermissionRequest(
            tool_name=self.name,
            action="network",
            target=params.query,
            description=f"Search the web for: {params.query}",
            grant_key="*",
        )

    async def run(self, params: WebSearchParams, ctx: ToolContext) -> ToolResult:
        """Search (or reuse a cached search) and format the hits for the model."""
        notes: list[str] = []
        requested = params.max_results if "max_results" in params.model_fields_set else self._default_results
        count = clamp_results(requested, MAX_RESULTS, notes)
        metadata: dict[str, object] = {"query": params.query, "max_results": count, "cached": False}

        hits = self._cache.get(params.query, count)
        if hits is not None:
            metadata["cached"] = True
            notes.append(CACHED_NOTE)
        else:
            hits = await self._search(params.query, count)
            if hits:
                # Empty results are not kept: they are often bot detection, and retrying may help.
                self._cache.put(params.query, count, hits)

        metadata["results"] = len(hits)
        metadata["urls"] = [hit.url for hit in hits]
        if not hits:
            return ToolResult(content="\n\n".join([NO_RESULTS_MESSAGE, *notes]), metadata=metadata)
        return ToolResult(
            content="\n\n".join([format_results(params.query, hits), *notes]), metadata=metadata
        )

    async def _search(self, query: str, count: int) -> list[SearchHit]:
        try:
            hits = await self._backend.search(query, count)
        except SearchRateLimited as error:
            raise ToolError(RATE_LIMITED_MESSAGE) from error
        except SearchTimedOut as error:
            raise ToolError(TIMED_OUT_MESSAGE) from error
        except SearchError as error:
            raise ToolError(f"{NO_RESULTS_MESSAGE}\n\nThe search engine reported: {error}") from error
        return _unique(hits)[:count]


def clamp_results(requested: int, maximum: int, notes: list[str]) -> int:
    """Return ``requested`` capped at ``maximum``, adding a note for the model when it was capped."""
    if requested <= maximum:
        return requested
    notes.append(f"Note: max_results {requested} was clamped to the maximum of {maximum}.")
    return maximum


def format_results(query: str, hits: list[SearchHit]) -> str:
    """The numbered list the model reads: title, then URL and summary indented under it."""
    lines = [f'Found {len(hits)} search results for "{query}":']
    for position, hit in enumerate(hits, start=1):
        lines.append("")
        lines.append(f"{position}. {_one_line(hit.title, MAX_TITLE_CHARS) or hit.url}")
        lines.append(f"   URL: {hit.url}")
        snippet = _one_line(hit.snippet, MAX_SNIPPET_CHARS)
        if snippet:
            lines.append(f"   Summary: {snippet}")
    return "\n".join(lines)


def _one_line(text: str, limit: int) -> str:
    flat = _WHITESPACE.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _unique(hits: list[SearchHit]) -> list[SearchHit]:
    """Hits with a URL, each URL once (engines merged by a metasearch may repeat a page)."""
    seen: set[str] = set()
    unique: list[SearchHit] = []
    for hit in hits:
        if hit.url and hit.url not in seen:
            seen.add(hit.url)
            unique.append(hit)
    return unique


__all__ = [
    "DEFAULT_RESULTS",
    "MAX_RESULTS",
    "NO_RESULTS_MESSAGE",
    "RATE_LIMITED_MESSAGE",
    "TIMED_OUT_MESSAGE",
    "SearchCache",
    "WebSearchParams",
    "WebSearchTool",
    "clamp_results",
    "format_results",
    "normalise_query",
]
