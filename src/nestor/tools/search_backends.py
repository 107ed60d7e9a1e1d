"""Where ``web_search`` gets its results: the :class:`SearchBackend` protocol and its back ends.

:class:`DdgsBackend` asks the ``ddgs`` metasearch library (DuckDuckGo first, other engines as
fallback); :class:`RecordedBackend` answers from fixed results, for tests and offline runs. A back
end reports failure with :class:`SearchError` subclasses so the tool can explain it to the model
without knowing which library is behind it.

``ddgs`` is imported only when a search actually runs: its engines pull in an HTTP stack and lxml,
which nestor's start-up should not pay for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

DEFAULT_DDGS_BACKENDS = "duckduckgo,brave,startpage,mojeek"
"""ddgs text engines, in order: ddgs asks the first few at once (two for up to 10 results), moves
down the list while it has too few results, and merges what it got."""

DEFAULT_REQUEST_TIMEOUT_SECONDS = 10
"""ddgs' timeout for each HTTP request to one engine."""

DEFAULT_DEADLINE_SECONDS = 30
"""The most a whole search (every engine ddgs tries) may take before it counts as timed out."""

_NO_RESULTS = "no results found"


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One search result: the page's title, its URL and the engine's snippet of it."""

    title: str
    url: str
    snippet: str = ""


class SearchBackend(Protocol):
    """A web search engine, seen from ``web_search``."""

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        """Return at most ``max_results`` hits for ``query``; an empty list when nothing matched.

        Raises:
            SearchError: The search could not be done (rate limited, timed out, engine failure).

        """
        ...


class SearchError(Exception):
    """A search that failed; the message says why, in terms a model can act on."""


class SearchRateLimited(SearchError):
    """The search engine refused the request because too many were made."""


class SearchTimedOut(SearchError):
    """The search engine did not answer in time."""


class TextSearcher(Protocol):
    """The part of ``ddgs.DDGS`` that :class:`DdgsBackend` uses."""

    def text(self, query: str, **kwargs: Any) -> list[dict[str, Any]]:
        """Run a text search; each result is a dict with ``title``, ``href`` and ``body``."""
        ...


DdgsFactory = Callable[[], TextSearcher]
"""Makes the ``ddgs.DDGS`` (or a stand-in) of one search."""


class DdgsBackend:
    """Searches through the ``ddgs`` library, in a worker thread since ddgs blocks.

    Args:
        backends: ddgs text engines, comma-separated, tried in order (``"auto"`` lets ddgs choose).
        request_timeout: Seconds ddgs waits for each engine's HTTP request.
        deadline: Seconds the whole search may take; past it the search counts as timed out (the
            worker thread cannot be interrupted and finishes in the background).
        ddgs_factory: Makes the searcher of one search; defaults to ``ddgs.DDGS(timeout=...)``.
            Tests inject a fake here so no search ever reaches the network.

    """

    def __init__(
        self,
        backends: str = DEFAULT_DDGS_BACKENDS,
        *,
        request_timeout: int = DEFAULT_REQUEST_TIMEOUT_SECONDS,
        deadline: float = DEFAULT_DEADLINE_SECONDS,
        ddgs_factory: DdgsFactory | None = None,
    ) -> None:
        self.backends = backends
        self.request_timeout = request_timeout
        self.deadline = deadline
        self._ddgs_factory = ddgs_factory or self._default_factory

    def _default_factory(self) -> TextSearcher:
        from ddgs import DDGS

        return DDGS(timeout=self.request_timeout)

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        """Search with ddgs in a thread and map its results and exceptions (see the class)."""
        try:
            async with asyncio.timeout(self.deadline):
                raw = await asyncio.to_thread(self._search_blocking, query, max_results)
        except TimeoutError as error:
            raise SearchTimedOut(f"no answer within {self.deadline:g} s") from error
        hits = [hit for hit in (_hit_from_ddgs(item) for item in raw) if hit is not None]
        return hits[:max_results]

    def _search_blocking(self, query: str, max_results: int) -> list[dict[str, Any]]:
        from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

        try:
            return self._ddgs_factory().text(query, max_results=max_results, backend=self.backends)
        except RatelimitException as error:
            raise SearchRateLimited(_cause(error)) from error
        except TimeoutException as error:
            raise SearchTimedOut(_cause(error)) from error
        except DDGSException as error:
            cause = _cause(error)
            # ddgs reports "nothing matched" (and engines answering with a non-200 page, which is
            # how DuckDuckGo's bot detection looks) with the same exception as real failures.
            if cause.strip().rstrip(".").lower() == _NO_RESULTS:
                return []
            raise SearchError(cause) from error


def _cause(error: BaseException) -> str:
    return str(error) or type(error).__name__


def _hit_from_ddgs(item: Mapping[str, Any]) -> SearchHit | None:
    """A ddgs text result (``title``/``href``/``body``) as a hit; None when it has no URL."""
    url = str(item.get("href") or "").strip()
    if not url:
        return None
    title = str(item.get("title") or "").strip()
    return SearchHit(title=title or url, url=url, snippet=str(item.get("body") or "").strip())


@dataclass
class RecordedBackend:
    """Answers from fixed results: tests and offline runs, never the network.

    Attributes:
        hits_by_query: The hits of each query, looked up exactly as the query was asked; an unknown
            query has no hits.
        errors_by_query: Queries that fail, and the error each raises.
        calls: Every ``(query, max_results)`` asked, in order.

    """

    hits_by_query: dict[str, list[SearchHit]] = field(default_factory=dict[str, list[SearchHit]])
    errors_by_query: dict[str, SearchError] = field(default_factory=dict[str, SearchError])
    calls: list[tuple[str, int]] = field(default_factory=list[tuple[str, int]])

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        """Record the call, then raise the query's error or return its first ``max_results`` hits."""
        self.calls.append((query, max_results))
        error = self.errors_by_query.get(query)
        if error is not None:
            raise error
        return list(self.hits_by_query.get(query, []))[:max_results]


__all__ = [
    "DEFAULT_DDGS_BACKENDS",
    "DdgsBackend",
    "DdgsFactory",
    "RecordedBackend",
    "SearchBackend",
    "SearchError",
    "SearchHit",
    "SearchRateLimited",
    "SearchTimedOut",
    "TextSearcher",
]
