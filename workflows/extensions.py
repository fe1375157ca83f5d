"""Extending an open case's deadline: minutes added to the timeout, with who and why."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from workflows.errors import Conflict, InvalidInput
from workflows.stage_results import EventSpec
from workflows.states import OPEN_FOR_DECISION, State
from workflows.text import one_line

MOST_AT_ONCE = timedelta(hours=24)
MOST_IN_ALL = timedelta(days=7)
REASON_LIMIT = 300


@dataclass(frozen=True)
class Extended:
    """The case's next look and total extension after the request, and its event."""

    next_action_at: datetime
    extended: timedelta
    event: EventSpec


def extension(
    case_id: str,
    state: State,
    *,
    next_action_at: datetime | None,
    extended: timedelta,
    minutes: int,
    by: str,
    reason: str,
) -> Extended:
    """Push the next deadline (follow-up or timeout) and the timeout by `minutes`."""
    if state not in OPEN_FOR_DECISION:
        raise Conflict(f"escalation {case_id} is {state}: only an open case is extended")
    if next_action_at is None:
        raise Conflict(f"escalation {case_id} is held for a person: it has no deadline")
    added = timedelta(minutes=minutes)
    if not timedelta() < added <= MOST_AT_ONCE:
        raise InvalidInput("minutes: between 1 and 1440")
    if extended + added > MOST_IN_ALL:
        raise InvalidInput("minutes: a case is extended by 7 days at most in all")
    said = one_line(reason, REASON_LIMIT)
    if not said:
        raise InvalidInput("reason: say why the case needs longer")
    event = EventSpec("snoozed", {"by": by, "reason": said, "minutes": minutes})
    return Extended(next_action_at + added, extended + added, event)
