"""An HTTP client that fetches only from addresses its :class:`AddressPolicy` allows.

Every request resolves its host, checks every address it resolves to, and connects to a checked
address itself: the URL is rewritten to the IP, the ``Host`` header carries the real name and, over
https, TLS is told the real name (``sni_hostname``) so the certificate is verified against it. A
second DNS answer (DNS rebinding) therefore never reaches the socket. Redirects are followed by hand
and every hop is checked again. Proxy variables are ignored: a proxy would make the address check
meaningless.
"""

from __future__ import annotations

import asyncio
import dataclasses
import socket
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from ipaddress import ip_address

import httpx

from nestor.tools.web.addresses import (
    AddressPolicy,
    IPAddress,
    ip_literal,
    normalise_host,
    refusal_message,
)
from nestor.tools.web.pages import (
    ERROR_EXCERPT_BYTES,
    FetchedPage,
    FetchError,
    binary_refusal,
    check_url,
    http_error,
    is_textual,
    media_type,
)

DEFAULT_TIMEOUT_S = 30.0
MAX_BODY_BYTES = 5 * 1024 * 1024
"""Reading a response body stops after this many bytes."""
MAX_REDIRECTS = 5
MAX_RETRIES = 2
MAX_RETRY_AFTER_S = 30.0
"""A server asking to wait longer (``Retry-After``) is retried after this long instead."""

USER_AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
)
ACCEPT = "text/html,application/xhtml+xml,application/json;q=0.9,text/plain;q=0.9,*/*;q=0.8"

_REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})
_RETRY_CODES = frozenset({429, 503})


Resolver = Callable[[str, int], Awaitable[list[str]]]
"""Resolves ``(host, port)`` to IP address strings."""


@dataclass(frozen=True, slots=True)
class _Redirect:
    location: str


@dataclass(frozen=True, slots=True)
class _Retry:
    page: FetchedPage
    retry_after: str | None


class SafeHttpClient:
    """Fetches http(s) URLs from allowed addresses only, over pooled connections.

    One ``httpx.AsyncClient`` is made on first use and reused by every call; :meth:`aclose` closes it.

    Args:
        policy: Which non-public addresses are allowed anyway.
        timeout_s: Seconds each request may take, body included (a call may override it).
        max_bytes: Reading a body stops after this many bytes; the page is then ``truncated``.
        max_redirects: Redirects followed before giving up.
        max_retries: Retries of a 429 or 503 response, waiting as ``Retry-After`` says.
        resolver: Resolves a host name to addresses (default: the event loop's ``getaddrinfo``).
        sleep: Waits between retries (injected by tests).
        user_agent: The ``User-Agent`` header sent.
        transport: The httpx transport (tests only; default: httpx's own, pooling connections).

    """

    def __init__(
        self,
        policy: AddressPolicy | None = None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_bytes: int = MAX_BODY_BYTES,
        max_redirects: int = MAX_REDIRECTS,
        max_retries: int = MAX_RETRIES,
        resolver: Resolver | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        user_agent: str = USER_AGENT,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.policy = policy or AddressPolicy()
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects
        self.max_retries = max_retries
        self._resolver = resolver or resolve
        self._sleep = sleep
        self._user_agent = user_agent
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def get(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
        text_only: bool = False,
    ) -> FetchedPage:
        """GET ``url``, following redirects and retrying 429/503, and return the final page.

        Args:
            url: An http:// or https:// URL.
            headers: Extra request headers.
            timeout_s: Seconds each request may take (default: the client's ``timeout_s``).
            text_only: Refuse a successful response whose declared type is not text before
                reading its body.

        Raises:
            FetchError: The URL is invalid or refused, a request failed or timed out, there were
                too many redirects, or the final status is not 2xx (``status`` and ``page`` set).

        """
        current = check_url(url)
        timeout = self.timeout_s if timeout_s is None else timeout_s
        redirects: list[str] = []
        retries = 0
        while True:
            outcome = await self._request_within(current, headers, timeout, text_only)
            if isinstance(outcome, _Retry):
                if retries >= self.max_retries:
                    raise http_error(outcome.page, note=f"still after {retries} retries")
                await self._sleep(retry_delay(outcome.retry_after, default=float(2**retries)))
                retries += 1
            elif isinstance(outcome, _Redirect):
                if len(redirects) >= self.max_redirects:
                    raise FetchError(
                        f"Fetching {url} failed: redirected more than {self.max_redirects} times.", url=url
                    )
                current = _check_redirect(current, outcome.location)
                redirects.append(current)
            else:
                return dataclasses.replace(outcome, redirects=tuple(redirects))

    async def aclose(self) -> None:
        """Close the pooled connections; a later call opens new ones."""
        client, self._client, self._loop = self._client, None, None
        if client is not None:
            await client.aclose()

    async def __aenter__(self) -> SafeHttpClient:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    async def _request_within(
        self, url: str, headers: Mapping[str, str] | None, timeout: float, text_only: bool
    ) -> FetchedPage | _Redirect | _Retry:
        try:
            async with asyncio.timeout(timeout):
                return await self._request(url, headers, timeout, text_only)
        except (TimeoutError, httpx.TimeoutException) as error:
            raise FetchError(f"Fetching {url} timed out after {timeout:g} s.", url=url) from error
        except (httpx.HTTPError, httpx.InvalidURL) as error:
            raise FetchError(f"Fetching {url} failed: {_describe(error)}", url=url) from error

    async def _request(
        self, url: str, headers: Mapping[str, str] | None, timeout: float, text_only: bool
    ) -> FetchedPage | _Redirect | _Retry:
        target = httpx.URL(url)
        addresses = await self._checked_addresses(url, target)
        client = self._pooled_client()
        *others, last = addresses
        for ip in others:
            try:
                return await self._send(client, url, target, ip, headers, timeout, text_only)
            except httpx.ConnectError:  # the next checked address may answer
                continue
        return await self._send(client, url, target, last, headers, timeout, text_only)

    async def _send(
        self,
        client: httpx.AsyncClient,
        url: str,
        target: httpx.URL,
        ip: IPAddress,
        headers: Mapping[str, str] | None,
        timeout: float,
        text_only: bool,
    ) -> FetchedPage | _Redirect | _Retry:
        request = self._build_request(client, target, ip, headers, timeout)
        response = await client.send(request, stream=True)
        try:
            return await self._outcome(url, response, text_only)
        finally:
            await response.aclose()

    async def _checked_addresses(self, url: str, target: httpx.URL) -> list[IPAddress]:
        host = normalise_host(target.host)
        literal = ip_literal(host)
        if literal is not None:
            candidates = [literal]
        else:
            port = target.port or (443 if target.scheme == "https" else 80)
            name = target.raw_host.decode("ascii")
            try:
                resolved = await self._resolver(name, port)
                candidates = [ip_address(text) for text in resolved]
            except OSError as error:
                cause = error.strerror or str(error) or type(error).__name__
                raise FetchError(
                    f"Fetching {url} failed: cannot resolve {host} ({cause}).", url=url
                ) from None
            except ValueError as error:
                raise FetchError(f"Fetching {url} failed: {host} resolves to {error}.", url=url) from None
        if not candidates:
            raise FetchError(f"Fetching {url} failed: {host} resolves to no address.", url=url)
        for ip in candidates:
            reason = self.policy.blocked_reason(ip, host)
            if reason is not None:
                raise FetchError(refusal_message(url, host, ip, reason), url=url)
        return candidates

    def _pooled_client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            # Pooled connections belong to the loop that opened them; another loop starts afresh.
            self._client = httpx.AsyncClient(
                follow_redirects=False,
                trust_env=False,
                timeout=self.timeout_s,
                headers={"User-Agent": self._user_agent, "Accept": ACCEPT},
                transport=self._transport,
            )
            self._loop = loop
        return self._client

    @staticmethod
    def _build_request(
        client: httpx.AsyncClient,
        target: httpx.URL,
        ip: IPAddress,
        headers: Mapping[str, str] | None,
        timeout: float,
    ) -> httpx.Request:
        merged = httpx.Headers(headers)
        merged["Host"] = target.netloc.decode("ascii")
        extensions: dict[str, object] = {}
        if target.scheme == "https" and ip_literal(normalise_host(target.host)) is None:
            extensions["sni_hostname"] = target.raw_host.decode("ascii")
        return client.build_request(
            "GET",
            target.copy_with(host=str(ip)),
            headers=merged,
            extensions=extensions,
            timeout=timeout,
        )

    async def _outcome(
        self, url: str, response: httpx.Response, text_only: bool
    ) -> FetchedPage | _Redirect | _Retry:
        status = response.status_code
        location = response.headers.get("location")
        if status in _REDIRECT_CODES and location:
            return _Redirect(location)
        content_type = response.headers.get("content-type", "")
        kind = media_type(content_type)
        if response.is_success:
            if text_only and kind and not is_textual(kind):
                raise FetchError(binary_refusal(url, kind), url=url)
            body, truncated = await read_capped(response, self.max_bytes)
        elif kind and not is_textual(kind):
            body, truncated = b"", False
        else:
            body, _ = await read_capped(response, min(ERROR_EXCERPT_BYTES, self.max_bytes))
            truncated = False
        page = FetchedPage(
            url, status, content_type, body, truncated, headers=httpx.Headers(response.headers)
        )
        if response.is_success:
            return page
        if status in _RETRY_CODES:
            return _Retry(page, response.headers.get("retry-after"))
        raise http_error(page)


async def resolve(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to, in the resolver's order, without repeats."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


async def read_capped(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
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


def retry_delay(value: str | None, *, default: float, now: datetime | None = None) -> float:
    """Seconds to wait as a ``Retry-After`` header says (seconds or an HTTP date), capped."""
    delay = default
    text = (value or "").strip()
    if text.isascii() and text.isdigit():
        delay = float(text)
    elif text:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError):
            when = None
        if when is not None:
            when = when if when.tzinfo else when.replace(tzinfo=UTC)
            delay = (when - (now or datetime.now(UTC))).total_seconds()
    return min(max(delay, 0.0), MAX_RETRY_AFTER_S)


def _check_redirect(current: str, location: str) -> str:
    try:
        target = str(httpx.URL(current).join(location))
    except (ValueError, httpx.InvalidURL) as error:
        raise FetchError(
            f"{current} redirected to an invalid URL {location!r}: {error}", url=current
        ) from None
    try:
        return check_url(target)
    except FetchError as error:
        raise FetchError(
            f"{current} redirected to {target}, which cannot be fetched: {error}", url=current
        ) from None


def _describe(error: Exception) -> str:
    return str(error) or type(error).__name__


__all__ = [
    "ACCEPT",
    "MAX_BODY_BYTES",
    "MAX_REDIRECTS",
    "USER_AGENT",
    "Resolver",
    "SafeHttpClient",
    "read_capped",
    "resolve",
    "retry_delay",
]
