"""An operator's acknowledgement of an open case: "I have it", with a reason, on the timeline.

An acknowledgement decides nothing: it records who is on the case and stops the reminders
and next-tier pages (a chain's levels too, when the chain stops on `ack`); the timeout
default still applies at the deadline, and a `hold` tier keeps waiting for that person.
"""

from __future__ import annotations

from workflows.chains import stops_on_ack
from workflows.design import Tier
from workflows.errors import Conflict, InvalidInput
from workflows.stage_results import EventSpec, Purpose
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


def stopped_by_ack(tier: Tier) -> frozenset[Purpose]:
    """The pages still waiting that an acknowledgement cancels: reminders, and the chain's
    levels when the chain stops on an ack (the first notice is never taken back)."""
    stopped = {Purpose.FOLLOW_UP}
    if stops_on_ack(tier.chain):
        stopped.add(Purpose.CHAIN)
    return frozenset(stopped)
