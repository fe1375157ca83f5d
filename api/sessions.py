"""Dashboard sign-in: an operator or admin token buys a signed session cookie.

The cookie names a role and which token signed in; a token taken out of the configuration
ends its sessions.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from itsdangerous import BadSignature, URLSafeTimedSerializer

from api.auth import role_of
from workers.runtime import Runtime

COOKIE = "escalate_dashboard"
SESSION_AGE = timedelta(hours=12)  # an operator signs in once a working day
ROLES = ("operator", "admin")
NAME_LIMIT = 40


@dataclass(frozen=True)
class Operator:
    """Who is signed in: a role, and the name they gave at sign-in."""

    role: str
    name: str

    @property
    def who(self) -> str:
        """'operator/ana', or the bare role when no name was given."""
        return f"{self.role}/{self.name}" if self.name else self.role


def clean_name(raw: str) -> str:
    """The name as recorded: printable, single-spaced, at most NAME_LIMIT characters."""
    return "".join(ch for ch in " ".join(raw.split()) if ch.isprintable())[:NAME_LIMIT]


def _fingerprint(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:16]


class SignIns:
    """Sessions for the tokens configured now: {token: role}."""

    def __init__(self, runtime: Runtime, tokens: Mapping[str, str]) -> None:
        self._signer = URLSafeTimedSerializer(runtime.answer_key, salt="escalate.dashboard")
        self._tokens = tokens

    def open(self, presented: str, name: str) -> str | None:
        """A new session's cookie, or None when the token is not an operator's or admin's."""
        role = role_of(self._tokens, presented)
        if role not in ROLES:
            return None
        return self._signer.dumps({"r": role, "f": _fingerprint(presented), "n": clean_name(name)})

    def find(self, cookie: str | None) -> Operator | None:
        """The session a cookie carries, while its token is still configured."""
        if not cookie:
            return None
        try:
            data: Any = self._signer.loads(cookie, max_age=int(SESSION_AGE.total_seconds()))
        except BadSignature:
            return None
        live = any(
            r == data.get("r") and hmac.compare_digest(_fingerprint(t), str(data.get("f")))
            for t, r in self._tokens.items()
        )
        return Operator(str(data["r"]), str(data.get("n") or "")) if live else None
