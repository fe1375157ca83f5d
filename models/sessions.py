"""Data functions over dashboard sign-ins: open one, find a live one, revoke."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from datetime import datetime, timedelta

from sqlmodel import Session, col, delete, select, update

from models.store import as_utc
from models.tables import DashboardSignIn

PRUNE_AFTER = timedelta(days=1)  # ended sign-ins are kept a day, then deleted


def _key(cookie: str) -> str:
    return hashlib.sha256(cookie.encode("utf-8", "surrogatepass")).hexdigest()


def open_session(
    session: Session, *, role: str, name: str, token_digest: str, now: datetime, age: timedelta
) -> str:
    """Store a new sign-in and return the cookie value that is its only key."""
    cookie = secrets.token_urlsafe(32)
    session.add(
        DashboardSignIn(
            id=_key(cookie),
            role=role,
            name=name,
            token_digest=token_digest,
            created_at=now,
            expires_at=now + age,
        )
    )
    # Sign-ins are few: tidy the ones long ended whenever someone signs in.
    session.execute(
        delete(DashboardSignIn).where(col(DashboardSignIn.expires_at) < now - PRUNE_AFTER)
    )
    return cookie


def live_session(
    session: Session, cookie: str, *, now: datetime, tokens: Mapping[str, str]
) -> DashboardSignIn | None:
    """The sign-in behind a cookie while it is unrevoked, unexpired, and its token is still
    configured with its role (`tokens`: {token digest: role})."""
    row = session.get(DashboardSignIn, _key(cookie))
    if row is None or row.revoked_at is not None:
        return None
    expires = as_utc(row.expires_at)
    if expires is None or expires <= now:
        return None
    return row if tokens.get(row.token_digest) == row.role else None


def revoke_session(session: Session, cookie: str, *, now: datetime) -> None:
    """End one sign-in (sign-out); an unknown cookie changes nothing."""
    session.execute(
        update(DashboardSignIn)
        .where(col(DashboardSignIn.id) == _key(cookie), col(DashboardSignIn.revoked_at).is_(None))
        .values(revoked_at=now)
    )


def revoke_unlisted(session: Session, *, tokens: Mapping[str, str], now: datetime) -> None:
    """End every sign-in whose token is no longer configured with its role."""
    for row in session.exec(
        select(DashboardSignIn).where(col(DashboardSignIn.revoked_at).is_(None))
    ):
        if tokens.get(row.token_digest) != row.role:
            row.revoked_at = now
            session.add(row)
