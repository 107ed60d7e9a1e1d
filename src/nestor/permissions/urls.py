"""Matching ``fetch`` rules against URLs, part by part.

A rule such as ``fetch(https://docs.python.org*)`` means "pages of docs.python.org", so it is
matched against the *parsed* URL, never its text: ``https://docs.python.org@evil.example/`` is a
page of evil.example (``docs.python.org`` is only its user name) and
``https://docs.python.org.evil.example/`` is another host altogether.

Patterns are ``scheme://host[:port][/path]`` (the host is a glob over the parsed host name, e.g.
``*.python.org``; a ``*`` glued to a plain host, as in ``https://docs.python.org*``, means any
path on that host and default port),
``host[/path]`` for any of http and https, or Claude Code's ``domain:example.com`` (that host and its
subdomains).
"""

from __future__ import annotations

import functools
import posixpath
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from urllib.parse import urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}
_SCHEME = re.compile(r"^([A-Za-z*][A-Za-z0-9+.*-]*)://(.*)$", re.DOTALL)
_AUTHORITY = re.compile(r"^([^/?#:]*)(?::([0-9]+|\*))?$")
_UNSAFE = re.compile(r"[\s\\\x00-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class UrlPattern:
    """A parsed ``fetch`` rule pattern.

    Attributes:
        scheme: A glob for the scheme (``*`` for any), lower case; None means http or https.
        host: A glob for the host name, lower case and IDNA-encoded; for a domain rule, the domain.
        domain: True for ``domain:`` rules: the host or any subdomain of it.
        port: The port, ``*`` for any, or None for the scheme's default port.
        path: A glob for the path (with ``?query`` when the URL has one), or None for any path.

    """

    scheme: str | None
    host: str
    domain: bool = False
    port: str | None = None
    path: str | None = None


@dataclass(frozen=True, slots=True)
class _Url:
    scheme: str
    host: str
    port: int | None
    path: str


class UrlPatternError(ValueError):
    """A ``fetch`` rule pattern that is not a URL, host or ``domain:`` pattern."""


@functools.lru_cache(maxsize=256)
def parse_url_pattern(text: str) -> UrlPattern:
    """Parse a ``fetch`` rule pattern; raise :class:`UrlPatternError` saying what is wrong."""
    text = text.strip()
    if text.lower().startswith("domain:"):
        domain = _normalise_host(text[len("domain:") :].strip())
        if not domain or "/" in domain or "*" in domain:
            raise UrlPatternError(f"domain:{domain} is not a domain name such as example.com")
        return UrlPattern(scheme=None, host=domain, domain=True, port="*")
    scheme: str | None = None
    scheme_match = _SCHEME.match(text)
    if scheme_match is not None:
        scheme, text = scheme_match.group(1).lower(), scheme_match.group(2)
    split = re.search(r"[/?#]", text)
    authority, path = (text[: split.start()], text[split.start() :]) if split else (text, None)
    if path is None and authority.endswith("*") and "*" not in authority.rstrip("*"):
        # "https://docs.python.org*" reads as "anything on docs.python.org", not a host prefix.
        authority, path = authority.rstrip("*"), "*"
    authority_match = _AUTHORITY.match(authority)
    if authority_match is None or not authority_match.group(1):
        raise UrlPatternError(f"{authority or text!r} is not a host such as example.com or *.example.com")
    host = _normalise_host(authority_match.group(1))
    if path is not None and path.startswith("#"):
        path = None
    return UrlPattern(scheme=scheme, host=host, port=authority_match.group(2), path=path)


def url_matches(pattern: UrlPattern, url: str) -> bool:
    """Return True when ``url`` is on the scheme, host, port and path that ``pattern`` names."""
    parsed = _parse_url(url)
    if parsed is None:
        return False
    if pattern.scheme is None:
        if parsed.scheme not in _DEFAULT_PORTS:
            return False
    elif not fnmatchcase(parsed.scheme, pattern.scheme):
        return False
    if pattern.domain:
        if parsed.host != pattern.host and not parsed.host.endswith("." + pattern.host):
            return False
    elif not fnmatchcase(parsed.host, pattern.host):
        return False
    port = parsed.port if parsed.port is not None else _DEFAULT_PORTS.get(parsed.scheme)
    if pattern.port is None:
        if port != _DEFAULT_PORTS.get(parsed.scheme):
            return False
    elif pattern.port != "*" and str(port) != pattern.port:
        return False
    return pattern.path is None or fnmatchcase(parsed.path, _pattern_path(pattern.path))


def _pattern_path(path: str) -> str:
    return path if path.startswith(("/", "*")) else "/" + path


def _parse_url(url: str) -> _Url | None:
    """The parts of ``url`` a rule matches, or None when it is not an absolute URL read one way only."""
    if _UNSAFE.search(url):
        # Clients disagree about backslashes and spaces in URLs; such a URL is matched by no rule.
        return None
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if not parts.scheme or not parts.hostname:
        return None
    path = parts.path or "/"
    # Dot segments are resolved before the request is sent, so "/docs/../admin" is "/admin".
    normal = posixpath.normpath(path)
    normal = "/" + normal.lstrip("/")
    if path.endswith("/") and normal != "/":
        normal += "/"
    if parts.query:
        normal += "?" + parts.query
    return _Url(parts.scheme.lower(), _normalise_host(parts.hostname), port, normal)


def _normalise_host(host: str) -> str:
    host = host.strip().rstrip(".").lower()
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host
