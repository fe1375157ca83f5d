"""Bearer tokens with roles: agents raise, operators answer, admins do both."""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from models import state_files
from models.settings import Settings
from workflows.errors import ConfigError

ROLES = ("agent", "operator", "admin")
bearer = HTTPBearer(auto_error=False)


@dataclass(frozen=True)
class Holder:
    """Who holds a token: its role, and the name bound to it in the configuration."""

    role: str
    name: str = ""

    @property
    def identity(self) -> str:
        """The token's name (or its role when none is bound): 'ana' answers as api:ana."""
        return self.name or self.role


def parse_holders(text: str) -> dict[str, Holder]:
    """'agent:abc,operator:def:ana' → {token: Holder}; ConfigError names the bad entry."""
    holders: dict[str, Holder] = {}
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        role, sep, rest = entry.partition(":")
        token, _, name = rest.partition(":")
        name = name.strip()
        if not sep or role not in ROLES or not token or (name and not _NAME.fullmatch(name)):
            raise ConfigError(
                f"ESCALATE_API_TOKENS: entry {entry.split(':')[0]!r}... must be "
                f"role:token[:name] with role one of {', '.join(ROLES)} and a name of "
                "letters, digits, . _ - (at most 40)"
            )
        holders[token] = Holder(role, name)
    return holders


_NAME = re.compile(r"[A-Za-z0-9._-]{1,40}")


def parse_tokens(text: str) -> dict[str, str]:
    """'agent:abc,operator:def' → {token: role}; raises ConfigError naming the bad entry."""
    return {token: holder.role for token, holder in parse_holders(text).items()}


def load_holders(settings: Settings) -> dict[str, Holder]:
    """Tokens from settings, or generated into the state folder: {token: Holder}."""
    if settings.api_tokens:
        return parse_holders(settings.api_tokens)
    return {token: Holder(role) for role, token in state_files.api_tokens(settings.home).items()}


def load_tokens(settings: Settings) -> dict[str, str]:
    """Tokens from settings, or generated into the state folder: {token: role}."""
    return {token: holder.role for token, holder in load_holders(settings).items()}


def holder_of(holders: Mapping[str, Holder], presented: str) -> Holder | None:
    """The holder of a presented token, compared in constant time against each known one."""
    found = None
    for token, holder in holders.items():
        if hmac.compare_digest(token.encode(), presented.encode()):
            found = holder
    return found


def require(*roles: str) -> Callable[..., str]:
    """A dependency that admits the given roles (admin always) and returns the caller's role."""
    holding = require_holder(*roles)

    def check(holder: Holder = Depends(holding)) -> str:
        return holder.role

    return check


def require_holder(*roles: str) -> Callable[..., Holder]:
    """A dependency that admits the given roles (admin always) and returns the token's holder."""
    allowed = set(roles) | {"admin"}

    def check(
        request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer)
    ) -> Holder:
        if credentials is None:
            raise HTTPException(
                status.HTTP_401_UNAUTHORIZED,
                "missing bearer token",
                headers={"WWW-Authenticate": "Bearer"},
            )
        holder = holder_of(request.app.state.holders, credentials.credentials)
        if holder is None:
            raise HTTPException(
                status.HTTP_401_UNAUTHORIZED,
                "unknown bearer token",
                headers={"WWW-Authenticate": "Bearer"},
            )
        if holder.role not in allowed:
            raise HTTPException(
                status.HTTP_403_FORBIDDEN,
                f"role {holder.role} may not do this (needs {' or '.join(sorted(allowed))})",
            )
        return holder

    return check
