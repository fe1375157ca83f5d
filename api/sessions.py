"""Dashboard sign-in: an operator or admin token buys a server-side session behind a cookie.

The cookie is a random key to a row (models/sessions.py), so signing out really ends it,
and a token taken out of the configuration ends every session it opened.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from api.tokens import Holder
from models.db import transaction
from models.sessions import live_session, open_session, revoke_session, revoke_unlisted
from workers.runtime import Runtime
from workflows.secrets import scan_text

COOKIE = "escalate_dashboard"
SESSION_AGE = timedelta(hours=12)  # an operator signs in once a working day
ROLES = ("operator", "admin")
NAME_LIMIT = 40


@dataclass(frozen=True)
class Operator:
    """Who is signed in: a role, the name they gave at sign-in, and the token's bound name."""

    role: str
    name: str
    bound: str = ""  # the name ESCALATE_API_TOKENS binds to the token (role:token:name)

    @property
    def who(self) -> str:
        """'operator/ana', or the bare role when no name was given."""
        return f"{self.role}/{self.name}" if self.name else self.role

    @property
    def identity(self) -> str:
        """Who answers, as the server knows it: the token's name or role, never the typed name."""
        return f"dashboard:{self.bound or self.role}"


def clean_name(raw: str) -> str:
    """The name as recorded: printable, single-spaced, at most NAME_LIMIT characters."""
    return "".join(ch for ch in " ".join(raw.split()) if ch.isprintable())[:NAME_LIMIT]


class SignIns:
    """Sessions for the tokens configured now: {token: Holder}."""

    def __init__(self, runtime: Runtime, tokens: Mapping[str, Holder]) -> None:
        self._runtime = runtime
        self._tokens = tokens

    def _digest(self, token: str) -> str:
        # Keyed, so the stored digest of a short token cannot be brute-forced offline.
        key = self._runtime.answer_key.encode()
        return hmac.new(key, b"dashboard-token:" + token.encode(), hashlib.sha256).hexdigest()

    def _roles_by_digest(self) -> dict[str, str]:
        return {self._digest(t): h.role for t, h in self._tokens.items() if h.role in ROLES}

    def _names_by_digest(self) -> dict[str, str]:
        return {self._digest(t): h.name for t, h in self._tokens.items()}

    def open(self, presented: str, name: str) -> str | None:
        """A new session's cookie, or None when the token is not an operator's or admin's."""
        digest = self._digest(presented)
        role = None
        for known, known_role in self._roles_by_digest().items():
            if hmac.compare_digest(known, digest):
                role = known_role
        if role is None:
            return None
        with transaction(self._runtime.engine) as session:
            return open_session(
                session,
                role=role,
                name="" if scan_text(name) else clean_name(name),  # a secret is never kept
                token_digest=digest,
                now=datetime.now(UTC),
                age=SESSION_AGE,
            )

    def find(self, cookie: str | None) -> Operator | None:
        """The live session behind a cookie, if any."""
        if not cookie:
            return None
        with transaction(self._runtime.engine) as session:
            row = live_session(
                session, cookie, now=datetime.now(UTC), tokens=self._roles_by_digest()
            )
            if row is None:
                return None
            return Operator(row.role, row.name, self._names_by_digest().get(row.token_digest, ""))

    def close(self, cookie: str | None) -> None:
        """Sign-out: the cookie's session ends here, whatever the browser keeps."""
        if cookie:
            with transaction(self._runtime.engine) as session:
                revoke_session(session, cookie, now=datetime.now(UTC))

    def revoke_removed_tokens(self) -> None:
        """End the sessions of tokens no longer configured (run at start)."""
        with transaction(self._runtime.engine) as session:
            revoke_unlisted(session, tokens=self._roles_by_digest(), now=datetime.now(UTC))
