"""Bearer tokens with roles: agents raise, operators answer, admins do both."""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from models import state_files
from models.settings import Settings
from workflows.errors import ConfigError

ROLES = ("agent", "operator", "admin")
bearer = HTTPBearer(auto_error=False)


def parse_tokens(text: str) -> dict[str, str]:
    """'agent:abc,operator:def' → {token: role}; raises ConfigError naming the bad entry."""
    tokens: dict[str, str] = {}
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        role, sep, token = entry.partition(":")
        if not sep or role not in ROLES or not token:
            raise ConfigError(
                f"ESCALATE_API_TOKENS: entry {entry.split(':')[0]!r}... must be "
                f"role:token with role one of {', '.join(ROLES)}"
            )
        tokens[token] = role
    return tokens


def load_tokens(settings: Settings) -> dict[str, str]:
    """Tokens from settings, or generated into the state folder: {token: role}."""
    if settings.api_tokens:
        return parse_tokens(settings.api_tokens)
    return {token: role for role, token in state_files.api_tokens(settings.home).items()}


def role_of(tokens: Mapping[str, str], presented: str) -> str | None:
    """The role of a presented token, compared in constant time against each known one."""
    found = None
    for token, role in tokens.items():
        if hmac.compare_digest(token.encode(), presented.encode()):
            found = role
    return found


def require(*roles: str) -> Callable[..., str]:
    """A dependency that admits the given roles (admin always) and returns the caller's role."""
    allowed = set(roles) | {"admin"}

    def check(
        request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer)
    ) -> str:
        if credentials is None:
            raise HTTPException(
                status.HTTP_401_UNAUTHORIZED,
                "missing bearer token",
                headers={"WWW-Authenticate": "Bearer"},
            )
        role = role_of(request.app.state.tokens, credentials.credentials)
        if role is None:
            raise HTTPException(
                status.HTTP_401_UNAUTHORIZED,
                "unknown bearer token",
                headers={"WWW-Authenticate": "Bearer"},
            )
        if role not in allowed:
            raise HTTPException(
                status.HTTP_403_FORBIDDEN,
                f"role {role} may not do this (needs {' or '.join(sorted(allowed))})",
            )
        return role

    return check
