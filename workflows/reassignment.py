"""Reassigning an open case to another severity tier (issue #11): the new tier's clock, from now.

The new tier's recipient is paged, its window, timeout and default apply from the moment of
the move, and what the old tier still had queued (its follow-up, the next tier's page) is not
sent. Who moved it and why go on the timeline and back to the run (workflows/reasons.py).
The design's rules stay whole: a harm_risk case still aborts on timeout whatever the tier,
destructive answers still need CONFIRM, and a critical tier takes only a stopped run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from workflows.case import Case
from workflows.design import Design
from workflows.errors import Conflict, InvalidInput
from workflows.routing import route_facts, tier_pages
from workflows.stage_results import EventSpec, Outbound
from workflows.states import OPEN_FOR_DECISION, REASSIGNED_INTO, State
from workflows.text import one_line
from workflows.vocabulary import Severity

REASON_LIMIT = 300
CRITICAL_WAITS = frozenset({"paused", "stopped"})  # SPEC §1: never let a critical case work


@dataclass(frozen=True)
class Reassigned:
    """The case after the move: its packet (the new severity), state, clock, pages, event."""

    packet: dict[str, Any]
    state: State
    next_action_at: datetime
    pages: tuple[Outbound, ...]
    event: EventSpec


def reassignment(
    case: Case,
    design: Design,
    *,
    to: str,
    by: str,
    reason: str,
    public_url: str,
    now: datetime,
) -> Reassigned:
    """Move an open case to tier `to`; raises Conflict (closed, same tier, a working run to
    critical) or InvalidInput (no such tier, no reason)."""
    if case.state not in OPEN_FOR_DECISION:
        raise Conflict(f"escalation {case.id} is {case.state}: only an open case is reassigned")
    tiers = [severity.value for severity in Severity]
    if to not in tiers:
        raise InvalidInput(f"tier: one of {', '.join(tiers)}, not {one_line(to, 40)!r}")
    current = str(case.packet.get("severity"))
    if to == current:
        raise Conflict(f"escalation {case.id} is at the {to} tier already")
    waiting = str(case.packet.get("waiting_behavior"))
    if to == Severity.CRITICAL and waiting not in CRITICAL_WAITS:
        raise Conflict(
            f"tier: critical needs a run that is paused or stopped; this one is {waiting}"
        )
    said = one_line(reason, REASON_LIMIT)
    if not said:
        raise InvalidInput("reason: say why the case needs another tier")
    # The new tier's clock, from now: an extension granted under the old tier does not carry.
    moved = replace(
        case, packet={**case.packet, "severity": to}, routed_at=now, extended=timedelta()
    )
    facts = route_facts(design, moved)
    tier = design.tier(to)
    event = EventSpec(
        "reassigned",
        {
            "by": by,
            "reason": said,
            "from": current,
            "to": to,
            "primary": tier.recipient.primary,
            "window_seconds": tier.window.total_seconds(),
            "timeout_seconds": tier.timeout.total_seconds(),
            "timeout_action": facts.timeout_action,
        },
    )
    pages = tier_pages(moved, design, public_url=public_url, now=now)
    return Reassigned(dict(moved.packet), REASSIGNED_INTO, now + tier.window, pages, event)
