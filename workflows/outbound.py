"""Where a target a run names (its wake webhook, its http probe) may lead: the allow-list.

Pure: the caller resolves the name and hands in each address; this module only judges.
Loopback, link-local, private, multicast and other non-public addresses, and the service's
own address, are refused unless ESCALATE_OUTBOUND_ALLOW names them.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from workflows.errors import InvalidInput

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
SETTING = "ESCALATE_OUTBOUND_ALLOW"
OWN = "the service's own address"
LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
HOST_NAME = re.compile(rf"^(?=.{{1,253}}$){LABEL}(?:\.{LABEL})*$")
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # the well-known prefix: an IPv4 address inside


@dataclass(frozen=True)
class AllowRule:
    """One allow-list entry: a network (an address is a /32 or /128) or a host name, on any
    port or on the one given."""

    network: Network | None = None
    host: str | None = None
    port: int | None = None

    def matches(self, host: str, address: Address, port: int) -> bool:
        if self.port is not None and self.port != port:
            return False
        if self.network is not None:
            return address.version == self.network.version and address in self.network
        return self.host == _name(host)


@dataclass(frozen=True)
class OutboundPolicy:
    """The operator's allow-list and the endpoints the service itself answers on."""

    allow: tuple[AllowRule, ...] = ()
    own_addresses: frozenset[Address] = frozenset()
    own_ports: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Refusal:
    """Why a target may not be reached: the name asked for, the address it led to, the kind."""

    host: str
    address: Address
    reason: str

    def __str__(self) -> str:
        shown = (
            str(self.address)
            if _name(self.host) == str(self.address)
            else (f"{self.host} ({self.address})")
        )
        return f"{shown} is not allowed ({self.reason}); set {SETTING}"


def parse_allow_list(text: str | None) -> tuple[AllowRule, ...]:
    """'10.0.0.0/8, hooks.internal, 127.0.0.1:9000, [::1]:9000' as rules; a bad entry is a
    ValueError that names it."""
    return tuple(_rule(entry.strip()) for entry in (text or "").split(",") if entry.strip())


def _rule(entry: str) -> AllowRule:
    spec, port = _split_port(entry)
    try:
        return AllowRule(network=ipaddress.ip_network(spec, strict=False), port=port)
    except ValueError:
        pass
    name = _name(spec)
    if not HOST_NAME.match(name) or name.replace(".", "").isdigit():
        raise InvalidInput(
            f"{SETTING}: {entry!r} is not a host, host:port, address or network (CIDR)"
        )
    return AllowRule(host=name, port=port)


def _split_port(entry: str) -> tuple[str, int | None]:
    """'[::1]:80' and 'host:80' carry a port; a bare IPv6 address ('::1') does not."""
    if entry.startswith("["):
        inside, bracket, rest = entry[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise InvalidInput(f"{SETTING}: {entry!r} is not [IPv6]:port")
        return inside, _port(entry, rest[1:]) if rest else None
    if entry.count(":") == 1:
        spec, _, port = entry.partition(":")
        return spec, _port(entry, port)
    return entry, None


def _port(entry: str, text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise InvalidInput(f"{SETTING}: {entry!r} has no valid port (1-65535)")
    return int(text)


def _name(host: str) -> str:
    return host.strip().lower().rstrip(".")


def plain(address: Address) -> Address:
    """An IPv4 address written as IPv6 (::ffff:a.b.c.d) is judged as the IPv4 address."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _kind(address: Address) -> str | None:
    """What makes an address internal; None for a public one."""
    inner: list[Address] = []
    if isinstance(address, ipaddress.IPv6Address):
        if address.sixtofour is not None:
            inner.append(address.sixtofour)
        if address in NAT64:
            inner.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    for candidate in (address, *inner):
        for label, flag in (
            ("loopback", candidate.is_loopback),
            ("link-local", candidate.is_link_local),
            ("multicast", candidate.is_multicast),
            ("unspecified", candidate.is_unspecified),
            ("private", candidate.is_private),
            ("reserved", candidate.is_reserved),
        ):
            if flag:
                return label
        if not candidate.is_global:
            return "not a public address"
    return None


def judge(policy: OutboundPolicy, *, host: str, address: Address, port: int) -> Refusal | None:
    """Why `address` (what `host` resolved to) may not be reached on `port`; None if it may.

    The allow-list lets anything it names through, except that the service's own endpoint
    (its address on its port) needs an entry naming that port: '127.0.0.1/32' admits a local
    receiver without admitting the service's own API.
    """
    address = plain(address)
    matching = [rule for rule in policy.allow if rule.matches(host, address, port)]
    own = address in policy.own_addresses
    if matching:
        if own and port in policy.own_ports and not any(rule.port == port for rule in matching):
            return Refusal(host, address, OWN)
        return None
    kind = _kind(address) or (OWN if own else None)
    return Refusal(host, address, kind) if kind else None
