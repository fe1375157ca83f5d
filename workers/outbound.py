"""Reaching a target a run named (its wake webhook, its http probe), and nowhere else.

The name is resolved once, every address it gives is judged by the allow-list
(workflows/outbound.py), and the connection is made to a judged address with the original
Host header and TLS server name: a second lookup that answers differently (DNS rebinding)
is never asked. Redirects are not followed. The operator's apprise channels do not come
through here: their configuration is trusted as written.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import cache

import httpx

from models.settings import Settings
from workflows.errors import PermanentError
from workflows.outbound import Address, OutboundPolicy, judge, parse_allow_list, plain

DEFAULT_PORTS = {"http": 80, "https": 443}
WILDCARDS = ("", "0.0.0.0", "::")


class OutboundRefused(PermanentError):
    """The target is not one the operator allows (or cannot be judged: no such name)."""


def resolve(host: str, port: int) -> list[Address]:
    """Every address `host` resolves to, in the resolver's order, each once."""
    found: list[Address] = []
    for *_, sockaddr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in found:
            found.append(address)
    return found


def policy_for(settings: Settings) -> OutboundPolicy:
    """The allow-list, and the addresses and ports this service answers on (by its bind
    address, its public URL and, when bound to every interface, its host name)."""
    public = httpx.URL(settings.resolved_public_url)
    names = {settings.host, public.host}
    if settings.host in WILDCARDS:
        names.add(socket.gethostname())
    own: set[Address] = set()
    for name in names - set(WILDCARDS):
        try:
            own.update(plain(address) for address in resolve(name, settings.port))
        except (OSError, UnicodeError):
            continue  # a name that does not resolve is no address to protect
    ports = {settings.port, public.port or DEFAULT_PORTS.get(public.scheme, 80)}
    return OutboundPolicy(
        parse_allow_list(settings.outbound_allow), frozenset(own), frozenset(ports)
    )


def vetted(url: httpx.URL, policy: OutboundPolicy) -> list[Address]:
    """The addresses `url` may be reached at, every one judged; OutboundRefused says why not."""
    if url.scheme not in DEFAULT_PORTS or not url.raw_host:
        raise OutboundRefused(f"{url}: must be an http(s) URL with a host")
    host = url.raw_host.decode("ascii")
    port = url.port or DEFAULT_PORTS[url.scheme]
    try:
        addresses = resolve(host, port)
    except (OSError, UnicodeError, ValueError):
        raise OutboundRefused(f"{host} does not resolve, so it cannot be checked") from None
    if not addresses:
        raise OutboundRefused(f"{host} does not resolve, so it cannot be checked")
    for address in addresses:
        refusal = judge(policy, host=host, address=address, port=port)
        if refusal is not None:
            raise OutboundRefused(str(refusal))
    return addresses


def _parsed(url: str) -> httpx.URL:
    try:
        return httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise OutboundRefused(f"not a URL ({exc})") from None


def refusal_of(url: str, policy: OutboundPolicy) -> str | None:
    """Why a run's URL would be refused now (for intake to name the field); None if allowed."""
    try:
        vetted(_parsed(url), policy)
    except OutboundRefused as exc:
        return str(exc)
    return None


@cache
def tls() -> ssl.SSLContext:
    """Certificates as httpx finds them (SSL_CERT_FILE included), made once per process: a
    new httpx client loads them again, about 20 ms of CPU."""
    return httpx.create_ssl_context(trust_env=True)


@contextmanager
def request(
    method: str,
    url: str,
    *,
    policy: OutboundPolicy,
    timeout: float,
    content: bytes | None = None,
    headers: Mapping[str, str] | None = None,
) -> Iterator[httpx.Response]:
    """The response of `url` reached at a judged address, its body unread (streamed);
    OutboundRefused before any connection when the target is not allowed."""
    target = _parsed(url)
    addresses = vetted(target, policy)
    sent_headers = {**(headers or {}), "Host": target.netloc.decode("ascii")}
    # No proxy from the environment (it would resolve the name itself) and no .netrc
    # credentials for a host the run chose; certificates still come from the environment.
    with httpx.Client(
        follow_redirects=False, trust_env=False, timeout=timeout, verify=tls()
    ) as client:
        for position, address in enumerate(addresses):
            prepared = client.build_request(
                method,
                target.copy_with(host=str(address)),
                content=content,
                headers=sent_headers,
                extensions={"sni_hostname": target.raw_host.decode("ascii")},
            )
            try:
                response = client.send(prepared, stream=True)
            except (httpx.ConnectError, httpx.ConnectTimeout):
                if position == len(addresses) - 1:
                    raise
                continue  # nothing was sent: the next judged address may answer
            try:
                yield response
            finally:
                response.close()
            return
