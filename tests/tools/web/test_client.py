from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime

import httpx
import pytest

from nestor.tools.base import ToolError
from nestor.tools.web.addresses import AddressPolicy
from nestor.tools.web.client import MAX_RETRY_AFTER_S, USER_AGENT, SafeHttpClient, retry_delay
from nestor.tools.web.pages import FetchedPage, FetchError, origin_of
from tests.tools.web.server import ARTICLE_HTML, LOOPBACK, PNG, SleepRecorder, WebServer, serve


@pytest.fixture(scope="module")
def server() -> Iterator[WebServer]:
    with serve() as running:
        yield running


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


@pytest.fixture
async def client(sleeps: SleepRecorder) -> AsyncIterator[SafeHttpClient]:
    async with SafeHttpClient(LOOPBACK, sleep=sleeps) as safe:
        yield safe


def resolver_of(table: dict[str, list[str]]):
    async def resolve(host: str, port: int) -> list[str]:
        return table[host]

    return resolve


async def test_fetches_a_page_with_its_status_type_and_body(
    server: WebServer, client: SafeHttpClient
) -> None:
    page = await client.get(server.url("/article.html"))

    assert page.status == 200
    assert page.content_type == "text/html; charset=utf-8"
    assert page.media_type == "text/html"
    assert page.charset == "utf-8"
    assert page.body == ARTICLE_HTML.encode()
    assert page.truncated is False
    assert page.redirects == ()
    assert page.url == server.url("/article.html")
    assert page.headers["content-length"] == str(len(ARTICLE_HTML.encode()))


async def test_body_stops_at_max_bytes(server: WebServer) -> None:
    async with SafeHttpClient(LOOPBACK, max_bytes=1_000) as small:
        page = await small.get(server.url("/article.html"))

    assert page.truncated is True
    assert page.body == ARTICLE_HTML.encode()[:1_000]


async def test_follows_three_redirects_and_lists_them(server: WebServer, client: SafeHttpClient) -> None:
    page = await client.get(server.url("/redirect/3"))

    assert page.body == b"arrived"
    assert page.url == server.url("/redirect/0")
    assert page.redirects == tuple(server.url(f"/redirect/{n}") for n in (2, 1, 0))


async def test_six_redirects_are_too_many(server: WebServer, client: SafeHttpClient) -> None:
    with pytest.raises(FetchError, match="redirected more than 5 times"):
        await client.get(server.url("/redirect/6"))


async def test_five_redirects_are_followed(server: WebServer, client: SafeHttpClient) -> None:
    page = await client.get(server.url("/redirect/5"))

    assert len(page.redirects) == 5


async def test_a_redirect_into_a_private_address_is_refused(server: WebServer) -> None:
    start = f"http://localhost:{server.state.port}/to-private"
    target = f"http://127.0.0.2:{server.state.port}/article.html"

    async with SafeHttpClient(AddressPolicy(allow_hosts=("localhost",))) as safe:
        with pytest.raises(FetchError) as caught:
            await safe.get(start)

    assert str(caught.value) == (
        f"Refused to fetch {target}: 127.0.0.2 is a loopback address; nestor does not fetch private or "
        "local addresses. To allow it, add it to [web] allow_hosts or allow_ranges in nestor.toml."
    )
    assert caught.value.url == target


async def test_allowed_host_is_reached_through_the_default_resolver(server: WebServer) -> None:
    async with SafeHttpClient(AddressPolicy(allow_hosts=("localhost",))) as safe:
        page = await safe.get(f"http://localhost:{server.state.port}/echo")

    assert json.loads(page.body)["host"] == f"localhost:{server.state.port}"


async def test_connects_to_the_checked_address_and_sends_the_real_host(server: WebServer) -> None:
    resolver = resolver_of({"docs.example.com": ["127.0.0.1"]})
    policy = AddressPolicy(allow_hosts=("docs.example.com",))

    async with SafeHttpClient(policy, resolver=resolver) as safe:
        page = await safe.get(f"http://docs.example.com:{server.state.port}/echo")

    echo = json.loads(page.body)
    assert echo == {"host": f"docs.example.com:{server.state.port}", "user_agent": USER_AGENT}
    assert page.url == f"http://docs.example.com:{server.state.port}/echo"


async def test_the_next_checked_address_is_tried_when_one_refuses(server: WebServer) -> None:
    resolver = resolver_of({"multi.test": ["127.0.0.3", "127.0.0.1"]})
    # The server listens on 127.0.0.1 only: connecting to 127.0.0.3 at its port is refused.
    async with SafeHttpClient(AddressPolicy(allow_networks=("127.0.0.0/8",)), resolver=resolver) as safe:
        page = await safe.get(f"http://multi.test:{server.state.port}/redirect/0")

    assert page.body == b"arrived"


async def test_a_host_resolving_to_loopback_is_refused() -> None:
    async with SafeHttpClient(resolver=resolver_of({"example.com": ["127.0.0.1"]})) as safe:
        with pytest.raises(FetchError) as caught:
            await safe.get("http://example.com/admin")

    assert str(caught.value) == (
        "Refused to fetch http://example.com/admin: example.com resolves to 127.0.0.1, a loopback address; "
        "nestor does not fetch private or local addresses. To allow it, add it to [web] allow_hosts or "
        "allow_ranges in nestor.toml."
    )


async def test_every_resolved_address_is_checked() -> None:
    resolver = resolver_of({"example.com": ["93.184.216.34", "10.0.0.5"]})

    async with SafeHttpClient(resolver=resolver) as safe:
        with pytest.raises(FetchError, match=r"example\.com resolves to 10\.0\.0\.5, a private address"):
            await safe.get("https://example.com/")


async def test_metadata_endpoint_is_refused_in_any_spelling() -> None:
    async with SafeHttpClient() as safe:
        for url in (
            "http://169.254.169.254/latest/",
            "http://2852039166/latest/",
            "http://[::ffff:a9fe:a9fe]/",
        ):
            with pytest.raises(FetchError, match="a cloud metadata address"):
                await safe.get(url)


@pytest.mark.parametrize("spelling", ["2130706433", "0x7f.1", "0x7f000001", "127.1"])
async def test_numeric_spellings_of_loopback_are_refused(spelling: str) -> None:
    async with SafeHttpClient() as safe:
        with pytest.raises(FetchError, match=r"127\.0\.0\.1 is a loopback address"):
            await safe.get(f"http://{spelling}/")


async def test_a_numeric_spelling_reaches_an_allowed_address(
    server: WebServer, client: SafeHttpClient
) -> None:
    page = await client.get(f"http://2130706433:{server.state.port}/redirect/0")

    assert page.body == b"arrived"


async def test_resolution_failure_is_a_clear_error() -> None:
    async def failing(host: str, port: int) -> list[str]:
        raise OSError(-2, "Name or service not known")

    async with SafeHttpClient(resolver=failing) as safe:
        with pytest.raises(FetchError, match=r"cannot resolve nowhere\.test \(Name or service not known\)"):
            await safe.get("http://nowhere.test/")


async def test_a_resolver_with_no_address_is_a_clear_error() -> None:
    async with SafeHttpClient(resolver=resolver_of({"empty.test": []})) as safe:
        with pytest.raises(FetchError, match="resolves to no address"):
            await safe.get("http://empty.test/")


async def test_https_connects_to_the_ip_with_the_real_name_for_tls() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, headers={"content-type": "text/plain"}, content=b"hello")

    resolver = resolver_of({"example.com": ["93.184.216.34"]})
    async with SafeHttpClient(resolver=resolver, transport=httpx.MockTransport(answer)) as safe:
        page = await safe.get("https://Example.com/docs?q=1")

    [request] = seen
    assert str(request.url) == "https://93.184.216.34/docs?q=1"
    assert request.headers["host"] == "example.com"
    assert request.extensions["sni_hostname"] == "example.com"
    assert page.url == "https://example.com/docs?q=1"
    assert page.body == b"hello"


async def test_429_is_retried_after_the_time_retry_after_asks(
    server: WebServer, client: SafeHttpClient, sleeps: SleepRecorder
) -> None:
    page = await client.get(server.url("/flaky/a/429/1?retry_after=1"))

    assert page.body == b"recovered after 1 failures"
    assert sleeps.calls == [1.0]


async def test_503_is_retried_twice_with_backoff(
    server: WebServer, client: SafeHttpClient, sleeps: SleepRecorder
) -> None:
    page = await client.get(server.url("/flaky/b/503/2"))

    assert page.status == 200
    assert page.body == b"recovered after 2 failures"
    assert sleeps.calls == [1.0, 2.0]


async def test_retries_give_up_after_max_retries(
    server: WebServer, client: SafeHttpClient, sleeps: SleepRecorder
) -> None:
    url = server.url("/flaky/c/503/3")
    with pytest.raises(FetchError) as caught:
        await client.get(url)

    assert (
        str(caught.value)
        == f"HTTP 503 Service Unavailable from {url} (still after 2 retries): Slow down, please."
    )
    assert caught.value.status == 503
    assert len(sleeps.calls) == 2


async def test_other_error_statuses_are_not_retried(
    server: WebServer, client: SafeHttpClient, sleeps: SleepRecorder
) -> None:
    with pytest.raises(FetchError) as caught:
        await client.get(server.url("/missing"))

    assert str(caught.value) == f"HTTP 404 Not Found from {server.url('/missing')}: Not Found No such page."
    assert caught.value.status == 404
    assert caught.value.page is not None
    assert b"No such page." in caught.value.page.body
    assert sleeps.calls == []


async def test_a_slow_page_times_out_with_a_clear_error(server: WebServer) -> None:
    async with SafeHttpClient(LOOPBACK, timeout_s=0.5) as safe:
        with pytest.raises(FetchError, match=r"^Fetching .*/slow timed out after 0\.5 s\.$"):
            await safe.get(server.url("/slow"))


async def test_text_only_refuses_binary_before_reading_it(server: WebServer, client: SafeHttpClient) -> None:
    with pytest.raises(FetchError, match="binary content of type image/png"):
        await client.get(server.url("/image.png"), text_only=True)

    page = await client.get(server.url("/image.png"))
    assert page.body == PNG


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("file:///etc/passwd", "not the file: scheme"),
        ("gopher://127.0.0.1:70/", "not the gopher: scheme"),
        ("example.com/page", "without a scheme"),
        ("http:///no-host", "no host"),
    ],
)
async def test_only_http_urls_with_a_host_are_fetched(url: str, message: str, client: SafeHttpClient) -> None:
    with pytest.raises(FetchError, match=message):
        await client.get(url)


async def test_fetch_errors_are_tool_errors(client: SafeHttpClient) -> None:
    with pytest.raises(ToolError):
        await client.get("ftp://example.com/")


async def test_proxy_variables_are_ignored(
    server: WebServer, client: SafeHttpClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)

    page = await client.get(server.url("/redirect/0"))

    assert page.body == b"arrived"


async def test_connections_are_pooled_across_calls(server: WebServer, client: SafeHttpClient) -> None:
    before = len(server.state.client_ports)
    await client.get(server.url("/redirect/0"))
    await client.get(server.url("/data.json"))

    first, second = server.state.client_ports[before:]
    assert first == second


def test_retry_after_accepts_seconds_and_http_dates_and_is_capped() -> None:
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)

    assert retry_delay("7", default=1.0, now=now) == 7.0
    assert retry_delay("Wed, 01 Jan 2025 12:00:05 GMT", default=1.0, now=now) == 5.0
    assert retry_delay("Wed, 01 Jan 2025 11:00:00 GMT", default=1.0, now=now) == 0.0
    assert retry_delay("3600", default=1.0, now=now) == MAX_RETRY_AFTER_S
    assert retry_delay("soon", default=2.0, now=now) == 2.0
    assert retry_delay("²", default=2.0, now=now) == 2.0
    assert retry_delay(None, default=4.0, now=now) == 4.0


def test_page_without_a_content_type_has_no_media_type_or_charset() -> None:
    page = FetchedPage("http://x.test/", 200, "", b"")

    assert page.media_type == ""
    assert page.charset is None


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://Docs.Example.com/a/b?q=1", "https://docs.example.com"),
        ("http://user:secret@host.test:8080/x", "http://host.test:8080"),
        ("http://[::1]:81/", "http://[::1]:81"),
        ("http://host.test:notaport/", "http://host.test:notaport/"),
    ],
)
def test_origin_is_scheme_host_and_port(url: str, origin: str) -> None:
    assert origin_of(url) == origin
