"""One error tree for the service: what is worth retrying, and what is not."""

from __future__ import annotations


class EscalationError(Exception):
    """Base of every error the service raises on purpose."""


class RetryableError(EscalationError):
    """A passing fault (network, lock, channel down): trying again may succeed."""


class PermanentError(EscalationError):
    """Bad input or a broken rule: trying again gives the same answer."""


class PacketRefused(PermanentError):
    """The packet failed its checks; nothing was stored or sent."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("packet refused: " + "; ".join(problems))


class NotFound(PermanentError):
    """No such escalation (or token, or link)."""


class Conflict(PermanentError):
    """The request clashes with recorded state (e.g. the case is already decided)."""
