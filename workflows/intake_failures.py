"""An escalation the service could not admit for a reason of its own, not the packet's.

Sent by name, the broker's message is the request's only copy. When the design cannot be
read, or a fault of ours stops the intake, the message is tried again after a doubling
pause, and after the last try stored as a `refused` case that says why: the sender finds it
by run and packet id (GET /v1/escalations?run=...). It is never acknowledged unseen.
"""

from __future__ import annotations

import traceback

from workflows.errors import DesignError
from workflows.text import one_line

MOST_DELAY = 60.0


def retry_delay(first: float, retries: int) -> float:
    """Seconds before the next try: `first`, then twice the last, at most a minute."""
    return min(first * 2.0**retries, MOST_DELAY)


def cause_of(error: BaseException) -> str:
    """What stopped the intake, safe to store and show: a design error's own words (they
    name the file and its problems), else only the error's type and where it was raised;
    its message may hold the packet's text, a secret included."""
    if isinstance(error, DesignError):
        return f"the design cannot be loaded: {one_line(str(error), 400)}"
    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}" if frames else ""
    return f"an unexpected {type(error).__name__}{where}"


def why_unadmitted(cause: str, *, tries: int) -> str:
    """The refused case's problem line."""
    return (
        f"intake: the service could not admit this escalation after {tries} tries ({cause}); "
        "nobody was asked. Raise it again with a new packet_id once the operator has fixed it."
    )
