"""One error tree for the service: what is worth retrying, and what is not.

EscalationError
├── RetryableError        a passing fault: trying again may succeed
│   ├── ProbeError        a fingerprint could not be read
│   └── StoreUnavailable  the database could not be reached or was busy
└── PermanentError        trying again gives the same answer
    ├── InvalidInput      one value is wrong (also a ValueError, so pydantic reports it)
    ├── Problems          several lines, each naming what is wrong
    │   ├── PacketRefused, RequestInvalid, PipelineStateError, DesignError
    ├── NotFound, Conflict, LinkRefused, Throttled, ConfigError (Unconfigured)
    ├── InboundRejected   a platform request that is not genuine or cannot be read
    └── Ignored           a genuine platform event that is not a reply

HTTP statuses are not decided here: api/ maps this tree to them in one table.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum


class EscalationError(Exception):
    """Base of every error the service raises on purpose."""


class RetryableError(EscalationError):
    """A passing fault (network, lock, channel down): trying again may succeed."""


class ProbeError(RetryableError):
    """The state fingerprint could not be read (missing path, unreachable URL, not a repo)."""


class StoreUnavailable(RetryableError):
    """The database did not answer (down, restarting, locked): what was being written may
    or may not be stored, so the caller tries again only what is safe to run twice."""


class PermanentError(EscalationError):
    """Bad input or a broken rule: trying again gives the same answer."""


class InvalidInput(PermanentError, ValueError):
    """One value is wrong; the message names it. A ValueError too, so that a pydantic
    validator raising it is reported as that field's error."""


class Problems(PermanentError, ValueError):
    """Every problem found at once, one actionable line each."""

    def __init__(self, problems: Sequence[str], summary: str | None = None) -> None:
        self.problems = list(problems)
        super().__init__(summary if summary is not None else "; ".join(self.problems))


class PacketRefused(Problems):
    """The packet failed its checks; nothing was stored or sent."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__(problems, "packet refused: " + "; ".join(problems))


class RequestInvalid(Problems):
    """A request file (composed or read back) breaks its schema."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__(problems, "request invalid: " + "; ".join(problems))


class PipelineStateError(Problems):
    """A pipeline's state files cannot carry an escalation; each line names file and key."""


class DesignError(Problems):
    """A design that cannot be used; each line is prefixed with the file it came from."""

    def __init__(self, source: str, problems: Sequence[str]) -> None:
        self.source = source
        super().__init__(problems, "\n".join(f"{source}: {problem}" for problem in problems))


class NotFound(PermanentError):
    """No such escalation (or token, or link)."""


class Conflict(PermanentError):
    """The request clashes with recorded state (e.g. the case is already decided)."""


class LinkRefused(PermanentError):
    """A link that is forged, altered or expired (one answer for all three)."""


class Throttled(PermanentError):
    """Too many failed attempts from one identity; it must wait before trying again."""


class ConfigError(PermanentError):
    """The service's own configuration cannot be used (tokens, channels, platform keys)."""


class Unconfigured(ConfigError):
    """A face this service was not set up for (Slack without its signing secret)."""


class Rejection(StrEnum):
    """Why an inbound platform request was refused."""

    NOT_GENUINE = "not_genuine"  # no or bad signature, stale timestamp, wrong secret
    UNREADABLE = "unreadable"  # genuine-looking but not a shape we can read


class InboundRejected(PermanentError):
    """A platform request that is not from the platform, or cannot be read."""

    def __init__(self, reason: str, *, why: Rejection = Rejection.UNREADABLE) -> None:
        self.reason = reason
        self.why = why
        super().__init__(f"inbound request rejected ({why}): {reason}")


class Ignored(PermanentError):
    """A genuine platform event that is not an operator reply (bot echo, edit, join, ...)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)
