"""Bearer tokens as request dependencies: agents raise, operators answer, admins do both."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from api.tokens import Holder, holder_of

bearer = HTTPBearer(auto_error=False)


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
