"""What the routes depend on: the runtime, a session, the caller's role, the dashboard sign-in.

Everything is read from `app.state`, which create_app fills once; no route closes over it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from ipaddress import IPv4Network, IPv6Network, ip_address
from typing import Annotated, cast
from urllib.parse import urlsplit

from fastapi import Cookie, Depends, Request
from sqlmodel import Session

from api.auth import require, require_holder
from api.sessions import COOKIE, Operator, SignIns
from api.tokens import Holder
from workers.inbound.dispatch import MissLimiter
from workers.runtime import Runtime


def runtime(request: Request) -> Runtime:
    return cast(Runtime, request.app.state.runtime)


RuntimeDep = Annotated[Runtime, Depends(runtime)]


def db_session(runtime: RuntimeDep) -> Iterator[Session]:
    with Session(runtime.engine) as db:
        yield db


DbDep = Annotated[Session, Depends(db_session)]


def miss_limiter(request: Request) -> MissLimiter:
    return cast(MissLimiter, request.app.state.limiter)


LimiterDep = Annotated[MissLimiter, Depends(miss_limiter)]

# Bearer-token roles; admin passes every check. Each is the caller's role.
CurrentAgent = Annotated[str, Depends(require("agent"))]
CurrentRole = Annotated[str, Depends(require("agent", "operator"))]
CurrentOperator = Annotated[str, Depends(require("operator"))]
# The token's holder (role and bound name): who an operator's answer is from.
OperatorHolder = Annotated[Holder, Depends(require_holder("operator"))]


def sign_ins(request: Request, runtime: RuntimeDep) -> SignIns:
    return SignIns(runtime, cast(Mapping[str, Holder], request.app.state.holders))


SignInsDep = Annotated[SignIns, Depends(sign_ins)]


class SignInRequired(Exception):
    """A dashboard page asked for without a live session: the handler sends to sign-in."""


class NotSignedIn(Exception):
    """A dashboard action without a live session, or from another site: refused (403)."""


def _session_cookie(
    escalate_dashboard: Annotated[str | None, Cookie(alias=COOKIE)] = None,
) -> str | None:
    return escalate_dashboard


SessionCookie = Annotated[str | None, Depends(_session_cookie)]


def dashboard_session(sign_ins: SignInsDep, cookie: SessionCookie) -> Operator:
    operator = sign_ins.find(cookie)
    if operator is None:
        raise SignInRequired
    return operator


def _origin(url: str) -> str:
    """scheme://host[:port] of a URL, as a browser's Origin header spells it."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def same_site(request: Request, runtime: RuntimeDep) -> bool:
    """The request names this site as its origin, or names none (SameSite=Strict already
    keeps the cookie off other sites' requests; this refuses them a second time)."""
    origin = request.headers.get("origin")
    if origin == "null":
        # Our pages' Referrer-Policy: no-referrer makes Chromium send "Origin: null" on a
        # form post; the browser's own Sec-Fetch-Site (no page can set it) then says whose.
        return request.headers.get("sec-fetch-site") == "same-origin"
    ours = {str(request.base_url).rstrip("/"), _origin(runtime.settings.resolved_public_url)}
    return not origin or origin in ours


def dashboard_action(
    request: Request, runtime: RuntimeDep, sign_ins: SignInsDep, cookie: SessionCookie
) -> Operator:
    operator = sign_ins.find(cookie) if same_site(request, runtime) else None
    if operator is None:
        raise NotSignedIn
    return operator


# A signed-in operator looking (else: to the sign-in page), or acting from this site (else 403).
DashboardSession = Annotated[Operator, Depends(dashboard_session)]
DashboardAction = Annotated[Operator, Depends(dashboard_action)]


def caller_address(request: Request, runtime: RuntimeDep) -> str:
    """The caller's address: the peer, or, when the peer is a configured trusted proxy, the
    nearest X-Forwarded-For entry that is not one (a header from anyone else is ignored)."""
    peer = request.client.host if request.client else "unknown"
    proxies = runtime.settings.proxy_networks
    if not proxies or not _within(peer, proxies):
        return peer
    hops = [h.strip() for h in request.headers.get("x-forwarded-for", "").split(",") if h.strip()]
    for hop in reversed(hops):
        if not _within(hop, proxies):
            return hop
    return peer


def _within(address: str, networks: tuple[IPv4Network | IPv6Network, ...]) -> bool:
    try:
        parsed = ip_address(address)
    except ValueError:
        return False
    return any(parsed in network for network in networks)


CallerAddress = Annotated[str, Depends(caller_address)]
