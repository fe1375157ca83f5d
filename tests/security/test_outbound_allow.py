"""ESCALATE_OUTBOUND_ALLOW judged without a network: what it parses to, what it lets through."""

from __future__ import annotations

import ipaddress
import re

import pytest

from workflows.outbound import OutboundPolicy, judge, parse_allow_list

OWN = OutboundPolicy(
    own_addresses=frozenset({ipaddress.ip_address("127.0.0.1")}), own_ports=frozenset({8765})
)


def reason(policy: OutboundPolicy, address: str, port: int = 80, host: str | None = None) -> str:
    refusal = judge(policy, host=host or address, address=ipaddress.ip_address(address), port=port)
    return refusal.reason if refusal else "allowed"


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("127.0.0.1", "loopback"),
        ("127.9.9.9", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),  # IPv4 spelled as IPv6 is judged as IPv4
        ("169.254.169.254", "link-local"),  # cloud metadata
        ("fe80::1", "link-local"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("fd00::1", "private"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("100.64.0.1", "not a public address"),  # carrier-grade NAT
        ("2002:7f00:1::", "loopback"),  # 6to4 wrapping 127.0.0.1
        ("93.184.216.34", "allowed"),
        ("2606:4700:4700::1111", "allowed"),
    ],
)
def test_by_default_only_public_addresses_are_reached(address: str, expected: str) -> None:
    assert reason(OutboundPolicy(), address) == expected


def test_the_service_own_public_address_is_refused_by_default() -> None:
    public = ipaddress.ip_address("93.184.216.34")
    policy = OutboundPolicy(own_addresses=frozenset({public}), own_ports=frozenset({443}))
    assert reason(policy, "93.184.216.34", 443) == "the service's own address"
    assert reason(policy, "93.184.216.34", 8080) == "the service's own address"


@pytest.mark.parametrize(
    ("allow", "address", "port", "host", "expected"),
    [
        ("127.0.0.1:9000", "127.0.0.1", 9000, None, "allowed"),
        ("127.0.0.1:9000", "127.0.0.1", 9001, None, "loopback"),  # the port is part of it
        ("127.0.0.1/32", "127.0.0.1", 9001, None, "allowed"),
        ("10.0.0.0/8", "10.20.30.40", 443, None, "allowed"),
        ("10.0.0.0/8", "192.168.0.1", 443, None, "private"),
        ("[::1]:9000", "::1", 9000, None, "allowed"),
        ("hooks.internal", "10.0.0.7", 443, "Hooks.Internal.", "allowed"),  # names by name
        ("hooks.internal", "10.0.0.7", 443, "other.internal", "private"),
        ("hooks.internal:8443", "10.0.0.7", 443, "hooks.internal", "private"),
        # The service's own endpoint needs an entry naming its port; a network is not enough
        ("127.0.0.1/32", "127.0.0.1", 8765, None, "the service's own address"),
        ("localhost", "127.0.0.1", 8765, "localhost", "the service's own address"),
        ("127.0.0.1:8765", "127.0.0.1", 8765, None, "allowed"),
    ],
)
def test_the_allow_list_lets_what_it_names_through(
    allow: str, address: str, port: int, host: str | None, expected: str
) -> None:
    policy = OutboundPolicy(parse_allow_list(allow), OWN.own_addresses, OWN.own_ports)
    assert reason(policy, address, port, host) == expected


def test_a_refusal_names_the_address_and_the_setting() -> None:
    refusal = judge(
        OutboundPolicy(), host="localhost", address=ipaddress.ip_address("::1"), port=80
    )
    assert str(refusal) == "localhost (::1) is not allowed (loopback); set ESCALATE_OUTBOUND_ALLOW"


@pytest.mark.parametrize("entry", ["*.internal", "http://hooks", "10.0.0", "host:0", "[::1"])
def test_an_entry_that_is_not_a_host_or_network_fails_by_name(entry: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"ESCALATE_OUTBOUND_ALLOW: {entry!r}")):
        parse_allow_list(f"10.0.0.0/8, {entry}")
