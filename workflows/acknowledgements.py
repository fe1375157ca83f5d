"""An operator's acknowledgement of an open case: "I have it", with a reason, on the timeline."""

from __future__ import annotations

from workflows.errors import Conflict, InvalidInput
from workflows.stage_results import EventSpec
from workflows.states import OPEN_FOR_DECISION, State
from workflows.text import one_line

REASON_LIMIT = 300


def acknowledgement(case_id: str, state: State, *, by: str, reason: str) -> EventSpec:
    """The event that records who took the case and why; only an open, routed case."""
    if state not in OPEN_FOR_DECISION:
        raise Conflict(f"escalation {case_id} is {state}: only an open case is acknowledged")
    said = one_line(reason, REASON_LIMIT)
    if not said:
        raise InvalidInput("reason: say why (e.g. 'looking at the totals now')")
    return EventSpec("acknowledged", {"by": by, "reason": said})
