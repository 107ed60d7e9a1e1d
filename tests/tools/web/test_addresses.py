from __future__ import annotations

from ipaddress import ip_address

import pytest

from nestor.tools.web.addresses import (
    AddressPolicy,
    address_reason,
    embedded_ipv4,
    ip_literal,
    normalise_host,
    parse_host,
    refusal_message,
)

DEFAULT = AddressPolicy()


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "a loopback address"),
        ("127.255.0.9", "a loopback address"),
        ("10.0.0.1", "a private address"),
        ("172.16.5.4", "a private address"),
        ("192.168.1.1", "a private address"),
        ("169.254.1.1", "a link-local address"),
        ("100.64.0.1", "a carrier-grade NAT (shared) address"),
        ("100.127.255.254", "a carrier-grade NAT (shared) address"),
        ("224.0.0.1", "a multicast address"),
        ("239.255.255.250", "a multicast address"),
        ("240.0.0.1", "a reserved address"),
        ("255.255.255.255", "a reserved address"),
        ("0.0.0.0", "the unspecified address"),
        ("0.1.2.3", "a non-public (special-purpose) address"),
        ("192.0.0.8", "an IETF protocol address"),
        ("192.0.2.1", "a non-public (special-purpose) address"),
        ("198.18.0.1", "a non-public (special-purpose) address"),
        ("::", "the unspecified address"),
        ("::1", "a loopback address"),
        ("fe80::1", "a link-local address"),
        ("fec0::1", "a site-local address"),
        ("fc00::1", "a unique local (private) address"),
        ("fd12:3456::1", "a unique local (private) address"),
        ("ff02::1", "a multicast address"),
        ("ff0e::1", "a multicast address"),
        ("2001:db8::1", "a non-public (special-purpose) address"),
    ],
)
def test_non_public_addresses_are_blocked(address: str, reason: str) -> None:
    assert DEFAULT.blocked_reason(ip_address(address), "host.test") == reason


@pytest.mark.parametrize(
    "address",
    ["169.254.169.254", "169.254.170.2", "100.100.100.200", "192.0.0.192", "168.63.129.16", "fd00:ec2::254"],
)
def test_cloud_metadata_addresses_are_blocked(address: str) -> None:
    assert DEFAULT.blocked_reason(ip_address(address), "metadata.test") == "a cloud metadata address"


@pytest.mark.parametrize(
    ("address", "kind", "inner", "inner_reason"),
    [
        ("::ffff:127.0.0.1", "IPv4-mapped", "127.0.0.1", "a loopback address"),
        ("::ffff:169.254.169.254", "IPv4-mapped", "169.254.169.254", "a cloud metadata address"),
        ("::ffff:168.63.129.16", "IPv4-mapped", "168.63.129.16", "a cloud metadata address"),
        ("::ffff:0:127.0.0.1", "IPv4-translated", "127.0.0.1", "a loopback address"),
        ("::127.0.0.1", "IPv4-compatible", "127.0.0.1", "a loopback address"),
        ("::10.0.0.1", "IPv4-compatible", "10.0.0.1", "a private address"),
        ("2002:7f00:1::", "6to4", "127.0.0.1", "a loopback address"),
        ("2002:a9fe:a9fe::1", "6to4", "169.254.169.254", "a cloud metadata address"),
        ("64:ff9b::127.0.0.1", "NAT64", "127.0.0.1", "a loopback address"),
        ("64:ff9b::10.0.0.1", "NAT64", "10.0.0.1", "a private address"),
        ("64:ff9b:1::a00:1", "NAT64", "10.0.0.1", "a private address"),
        # Teredo: server 8.8.8.8, client 127.0.0.1 (stored inverted), and server 10.0.0.1.
        ("2001:0:808:808::80ff:fffe", "Teredo", "127.0.0.1", "a loopback address"),
        ("2001:0:a00:1::f7f7:f7f7", "Teredo", "10.0.0.1", "a private address"),
    ],
)
def test_ipv4_embedded_in_ipv6_is_unwrapped_and_judged(
    address: str, kind: str, inner: str, inner_reason: str
) -> None:
    reason = DEFAULT.blocked_reason(ip_address(address), "host.test")

    assert reason == f"an IPv6 address ({kind}) embedding {inner}, {inner_reason}"


@pytest.mark.parametrize(
    "address",
    [
        *("8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "2a00:1450:4001:82a::200e"),
        *("::ffff:8.8.8.8", "64:ff9b::8.8.8.8", "2002:808:808::1", "2001:0:808:808::f7f7:f7f7"),
    ],
)
def test_public_addresses_and_wrappers_of_public_addresses_are_allowed(address: str) -> None:
    assert DEFAULT.blocked_reason(ip_address(address), "host.test") is None


def test_embedded_ipv4_reports_nothing_for_plain_addresses() -> None:
    assert embedded_ipv4(ip_address("2606:4700:4700::1111")) == ("", ())
    assert embedded_ipv4(ip_address("8.8.8.8")) == ("", ())
    assert embedded_ipv4(ip_address("::1")) == ("", ())


def test_allow_networks_lift_the_block_inside_the_range_only() -> None:
    policy = AddressPolicy(allow_networks=("10.20.0.0/16", "fd00:1::/32"))

    assert policy.blocked_reason(ip_address("10.20.3.4"), "build.test") is None
    assert policy.blocked_reason(ip_address("::ffff:10.20.3.4"), "build.test") is None
    assert policy.blocked_reason(ip_address("fd00:1::5"), "build.test") is None
    assert policy.blocked_reason(ip_address("10.21.0.1"), "build.test") == "a private address"
    assert policy.blocked_reason(ip_address("127.0.0.1"), "build.test") == "a loopback address"


def test_allow_hosts_globs_lift_the_block_for_matching_names_only() -> None:
    policy = AddressPolicy(allow_hosts=("*.Corp.Example", "localhost"))
    private = ip_address("10.0.0.7")

    assert policy.blocked_reason(private, "git.corp.example") is None
    assert policy.blocked_reason(private, "GIT.corp.example.") is None
    assert policy.blocked_reason(ip_address("127.0.0.1"), "localhost") is None
    assert policy.blocked_reason(private, "corp.example") == "a private address"
    assert policy.blocked_reason(private, "corp.example.evil.test") == "a private address"


@pytest.mark.parametrize("address", ["0.0.0.0", "::", "::ffff:0.0.0.0"])
def test_the_unspecified_address_is_never_allowed(address: str) -> None:
    policy = AddressPolicy(allow_hosts=("*",), allow_networks=("0.0.0.0/0", "::/0"))

    reason = policy.blocked_reason(ip_address(address), "anything.test")

    assert reason is not None
    assert "unspecified" in reason


def test_allow_lists_do_not_lift_blocks_for_other_hosts_or_ranges() -> None:
    policy = AddressPolicy(allow_hosts=("intranet.test",), allow_networks=("192.168.0.0/16",))

    assert policy.blocked_reason(ip_address("169.254.169.254"), "other.test") == "a cloud metadata address"


def test_invalid_networks_are_rejected_when_the_policy_is_made() -> None:
    with pytest.raises(ValueError, match="does not appear to be"):
        AddressPolicy(allow_networks=("ten-dot-something",))


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://2130706433/", "127.0.0.1"),
        ("http://0x7f.1/", "127.0.0.1"),
        ("http://0x7f000001/", "127.0.0.1"),
        ("http://0177.0.0.1/", "127.0.0.1"),
        ("http://0177.1/", "127.0.0.1"),
        ("http://127.1/", "127.0.0.1"),
        ("http://0xa9.0xfe.0xa9.0xfe/latest/meta-data/", "169.254.169.254"),
        ("http://2852039166/", "169.254.169.254"),
        ("http://[::1]:8080/", "::1"),
        ("http://[::ffff:7f00:1]/", "::ffff:7f00:1"),
        ("HTTP://Docs.Example.COM./path", "docs.example.com"),
        ("https://user:secret@example.com:8443/x", "example.com"),
        ("http://1.2.3.4.5/", "1.2.3.4.5"),
        ("http://08.1.1.1/", "08.1.1.1"),
        ("http://deadbeef.example/", "deadbeef.example"),
    ],
)
def test_parse_host_normalises_numeric_ipv4_spellings(url: str, host: str) -> None:
    assert parse_host(url) == host


@pytest.mark.parametrize("url", ["http://2130706433/", "http://0x7f.1/", "http://0177.0.0.1/"])
def test_numeric_spellings_of_loopback_are_judged_as_loopback(url: str) -> None:
    ip = ip_literal(parse_host(url))

    assert ip is not None
    assert DEFAULT.blocked_reason(ip, parse_host(url)) == "a loopback address"


@pytest.mark.parametrize("url", ["http:///path", "not a url", "http://[::1/"])
def test_parse_host_rejects_urls_without_a_host(url: str) -> None:
    with pytest.raises(ValueError, match="invalid URL"):
        parse_host(url)


def test_normalise_host_strips_brackets_and_case() -> None:
    assert normalise_host("[FE80::1]") == "fe80::1"
    assert ip_literal("example.com") is None


def test_refusal_of_a_host_name_names_host_address_reason_and_the_setting() -> None:
    message = refusal_message(
        "http://example.com/x", "example.com", ip_address("127.0.0.1"), "a loopback address"
    )

    assert message == (
        "Refused to fetch http://example.com/x: example.com resolves to 127.0.0.1, a loopback address; "
        "nestor does not fetch private or local addresses. To allow it, add it to [web] allow_hosts or "
        "allow_ranges in nestor.toml."
    )
    assert "\n" not in message


def test_refusal_of_an_address_literal_says_what_the_address_is() -> None:
    message = refusal_message("http://10.0.0.1/", "10.0.0.1", ip_address("10.0.0.1"), "a private address")

    assert message.startswith("Refused to fetch http://10.0.0.1/: 10.0.0.1 is a private address; ")


def test_refusal_of_the_unspecified_address_offers_no_setting() -> None:
    ip = ip_address("0.0.0.0")
    message = refusal_message("http://0.0.0.0:8000/", "0.0.0.0", ip, address_reason(ip) or "")

    assert message == (
        "Refused to fetch http://0.0.0.0:8000/: "
        "0.0.0.0 is the unspecified address, which nestor never fetches."
    )
