from __future__ import annotations

from nestor.tools.web.cache import CachedPage, WebCache, cache_key
from nestor.tools.web.content import ConvertedPage

PAGE = ConvertedPage("# Hello", "markdown", "Hello")


def test_a_cached_page_is_found_under_equivalent_spellings_of_its_url() -> None:
    cache = WebCache()
    cache.put("https://Docs.Example.com/guide#install", CachedPage("https://docs.example.com/guide", PAGE))

    entry = cache.get("HTTPS://docs.example.com:443/guide")

    assert entry is not None
    assert entry.page == PAGE
    assert cache.get("https://docs.example.com/other") is None


def test_a_redirected_page_is_cached_under_both_urls() -> None:
    cache = WebCache()
    entry = CachedPage("https://example.com/new", PAGE, redirects=("https://example.com/new",))
    cache.put("https://example.com/old", entry)

    assert cache.get("https://example.com/old") is entry
    assert cache.get("https://example.com/new") is entry
    assert len(cache) == 1


def test_visited_urls_are_recorded_once_in_order() -> None:
    cache = WebCache()
    for url in ("https://a.test/", "https://b.test/", " https://a.test/ "):
        cache.record_visit(url)

    assert cache.visited == ("https://a.test/", "https://b.test/")


def test_cache_key_of_an_unparsable_url_is_the_url() -> None:
    assert cache_key(" http://[::1/ ") == "http://[::1/"
