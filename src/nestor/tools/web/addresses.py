"""Which network addresses nestor may fetch from: public ones, plus what the user allows.

A model that can make nestor fetch any URL could otherwise read the user's router, a cloud
instance's metadata service (and the credentials in it) or any service listening on localhost:
server-side request forgery. :class:`AddressPolicy` judges every address a host resolves to.

``ipaddress``' ``is_global`` is not enough on its own: it calls multicast addresses, NAT64
(``64:ff9b::/96``), 6to4 (``2002::/16``) and IPv4-compatible IPv6 addresses global, and
``100.100.100.200`` (a cloud metadata address) is not private. So IPv4 addresses embedded in IPv6
are unwrapped and judged themselves, and metadata, multicast, reserved and unspecified addresses
are refused explicitly.
"""

from __future__ import annotations

import fnmatch
import re
import socket
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address, ip_network
from urllib.parse import urlsplit

IPAddress = IPv4Address | IPv6Address
IPNetwork = IPv4Network | IPv6Network

CONFIG_HINT = "add it to [web] allow_hosts or allow_ranges in nestor.toml"

METADATA_ADDRESSES = frozenset(
    ip_address(text)
    for text in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, ...
        "169.254.170.2",  # AWS ECS task credentials
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud
        "168.63.129.16",  # Azure wire server: a public address, so is_global cannot catch it
        "fd00:ec2::254",  # AWS over IPv6
    )
)
"""Cloud instance metadata services: they hand out credentials to whoever asks."""

_CGNAT = IPv4Network("100.64.0.0/10")
_IETF_PROTOCOL = IPv4Network("192.0.0.0/24")
_RFC1918 = (IPv4Network("10.0.0.0/8"), IPv4Network("172.16.0.0/12"), IPv4Network("192.168.0.0/16"))
_UNIQUE_LOCAL = IPv6Network("fc00::/7")
_SITE_LOCAL = IPv6Network("fec0::/10")
_NAT64 = IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = IPv6Network("64:ff9b:1::/48")
_IPV4_COMPATIBLE = IPv6Network("::/96")
_IPV4_TRANSLATED = IPv6Network("::ffff:0:0:0/96")
_LOW_32_BITS = 0xFFFFFFFF

# Only what inet_aton could read as an address: dotted parts in decimal, octal (leading 0) or hex.
_NUMERIC_HOST = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)(?:\.(?:0x[0-9a-f]*|[0-9]+)){0,3}", re.IGNORECASE)


@dataclass(frozen=True)
class AddressPolicy:
    """Which non-public addresses may be fetched anyway; public addresses always may.

    Attributes:
        allow_hosts: Host name globs (``fnmatch``, case-insensitive: ``*.corp.example``) whose
            addresses are allowed whatever they are.
        allow_networks: Address ranges (CIDR, ``10.20.0.0/16``) allowed although not public.

    The unspecified address (``0.0.0.0``, ``::``) is never allowed: connecting to it reaches the
    local machine.

    """

    allow_hosts: tuple[str, ...] = ()
    allow_networks: tuple[str, ...] = ()
    _networks: tuple[IPNetwork, ...] = field(init=False, repr=False, compare=False, default=())

    def __post_init__(self) -> None:
        networks = tuple(ip_network(text, strict=False) for text in self.allow_networks)
        object.__setattr__(self, "_networks", networks)

    def blocked_reason(self, ip: IPAddress, host: str) -> str | None:
        """Why ``ip`` (an address of ``host``) may not be fetched, or None when it may.

        The reason reads as a noun phrase: ``"a loopback address"``.
        """
        reason = address_reason(ip)
        if reason is None or is_unspecified(ip):
            return reason
        if self.host_allowed(host) or self._network_allowed(ip):
            return None
        return reason

    def host_allowed(self, host: str) -> bool:
        """Return True when ``host`` matches one of :attr:`allow_hosts`."""
        name = host.rstrip(".").lower()
        return bool(name) and any(fnmatch.fnmatchcase(name, pattern.lower()) for pattern in self.allow_hosts)

    def _network_allowed(self, ip: IPAddress) -> bool:
        candidates: list[IPAddress] = [ip, *embedded_ipv4(ip)[1]]
        return any(
            candidate.version == network.version and candidate in network
            for candidate in candidates
            for network in self._networks
        )


def address_reason(ip: IPAddress) -> str | None:
    """Why ``ip`` is not a public address one may fetch from, or None when it is one."""
    if isinstance(ip, IPv4Address):
        return _ipv4_reason(ip)
    return _ipv6_reason(ip)


def is_unspecified(ip: IPAddress) -> bool:
    """Return True for ``0.0.0.0``, ``::`` and IPv6 spellings embedding ``0.0.0.0``."""
    return ip.is_unspecified or any(inner.is_unspecified for inner in embedded_ipv4(ip)[1])


def embedded_ipv4(ip: IPAddress) -> tuple[str, tuple[IPv4Address, ...]]:
    """The kind of IPv6 wrapper ``ip`` is and the IPv4 addresses inside it (none for plain addresses)."""
    if isinstance(ip, IPv4Address):
        return "", ()
    low = IPv4Address(int(ip) & _LOW_32_BITS)
    if ip.ipv4_mapped is not None:
        return "IPv4-mapped", (ip.ipv4_mapped,)
    if ip in _IPV4_TRANSLATED:
        return "IPv4-translated", (low,)
    if ip in _IPV4_COMPATIBLE and int(ip) > 1:  # :: and ::1 are themselves, not wrappers
        return "IPv4-compatible", (low,)
    if ip in _NAT64 or ip in _NAT64_LOCAL:
        return "NAT64", (low,)
    if ip.sixtofour is not None:
        return "6to4", (ip.sixtofour,)
    if ip.teredo is not None:
        return "Teredo", ip.teredo
    return "", ()


def _ipv4_reason(ip: IPv4Address) -> str | None:
    checks: tuple[tuple[bool, str], ...] = (
        (ip in METADATA_ADDRESSES, "a cloud metadata address"),
        (ip.is_unspecified, "the unspecified address"),
        (ip.is_loopback, "a loopback address"),
        (ip.is_link_local, "a link-local address"),
        (ip in _CGNAT, "a carrier-grade NAT (shared) address"),
        (ip.is_multicast, "a multicast address"),
        (any(ip in network for network in _RFC1918), "a private address"),
        (ip in _IETF_PROTOCOL, "an IETF protocol address"),
        (ip.is_reserved, "a reserved address"),
        (not ip.is_global, "a non-public (special-purpose) address"),
    )
    return next((reason for hit, reason in checks if hit), None)


def _ipv6_reason(ip: IPv6Address) -> str | None:
    if ip in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if ip.is_unspecified:
        return "the unspecified address"
    if ip.is_loopback:
        return "a loopback address"
    kind, inner = embedded_ipv4(ip)
    if inner:
        # The wrapper is judged by what it carries: connecting to it reaches the IPv4 address.
        for address in inner:
            reason = _ipv4_reason(address)
            if reason is not None:
                return f"an IPv6 address ({kind}) embedding {address}, {reason}"
        return None
    checks: tuple[tuple[bool, str], ...] = (
        (ip.is_link_local, "a link-local address"),
        (ip in _SITE_LOCAL, "a site-local address"),
        (ip in _UNIQUE_LOCAL, "a unique local (private) address"),
        (ip.is_multicast, "a multicast address"),
        (ip.is_reserved, "a reserved address"),
        (not ip.is_global, "a non-public (special-purpose) address"),
    )
    return next((reason for hit, reason in checks if hit), None)


def normalise_host(host: str) -> str:
    """``host`` lower-cased without a trailing dot, numeric IPv4 spellings as a dotted quad.

    ``2130706433``, ``0x7f.1`` and ``0177.0.0.1`` all mean ``127.0.0.1`` to ``inet_aton`` (and so to
    many resolvers and HTTP stacks); they are normalised so they are judged as the address they are.
    """
    name = host.strip().lower()
    if name.endswith(".") and name != ".":
        name = name[:-1]
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if _NUMERIC_HOST.fullmatch(name):
        try:
            return str(IPv4Address(socket.inet_aton(name)))
        except OSError:
            return name
    return name


def parse_host(url: str) -> str:
    """The host of ``url``, normalised (see :func:`normalise_host`).

    Raises:
        ValueError: ``url`` cannot be parsed or has no host.

    """
    try:
        hostname = urlsplit(url.strip()).hostname
    except ValueError as error:
        raise ValueError(f"invalid URL {url!r}: {error}") from None
    if not hostname:
        raise ValueError(f"invalid URL {url!r}: it has no host")
    return normalise_host(hostname)


def ip_literal(host: str) -> IPAddress | None:
    """The address ``host`` spells (after :func:`normalise_host`), or None for a host name."""
    try:
        return ip_address(host)
    except ValueError:
        return None


def refusal_message(url: str, host: str, ip: IPAddress, reason: str) -> str:
    """The one-line refusal of ``url``: which host, which address, why, and how to allow it."""
    subject = f"{ip} is" if ip_literal(host) == ip else f"{host} resolves to {ip},"
    if is_unspecified(ip):
        return f"Refused to fetch {url}: {subject} {reason}, which nestor never fetches."
    return (
        f"Refused to fetch {url}: {subject} {reason}; nestor does not fetch private or local addresses. "
        f"To allow it, {CONFIG_HINT}."
    )


__all__ = [
    "CONFIG_HINT",
    "METADATA_ADDRESSES",
    "AddressPolicy",
    "IPAddress",
    "address_reason",
    "embedded_ipv4",
    "ip_literal",
    "is_unspecified",
    "normalise_host",
    "parse_host",
    "refusal_message",
]
