"""The console's cards: a case row, its decision and events, read into what a page shows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from models.store import as_utc, case_of, design_of
from models.tables import Decision, Escalation, Event
from workers.answers import reply_context
from workflows.advisory import advisory
from workflows.case import Option
from workflows.console import (
    Badge,
    badges,
    closed_summary,
    countdown,
    last_attempts,
    safe_link,
)
from workflows.design import Design
from workflows.errors import DesignError
from workflows.judgement import destructive_labels
from workflows.routing import route_facts
from workflows.states import OPEN_FOR_DECISION, TERMINAL, State

STATE_WORDS = {
    "received": "received",
    "snapshotted": "being routed",
    "awaiting": "waiting for an answer",
    "followed_up": "followed up",
    "decided": "decided, closing",
    "closed": "closed",
    "refused": "refused",
    "dead_letter": "parked",
}
TimedEvent = tuple[datetime | None, str, Mapping[str, Any]]


@dataclass(frozen=True)
class Answerable:
    """One answer as offered on a card: its label, description, and whether it is destructive."""

    label: str
    description: str
    destructive: bool
    href: str


def recommendation(row: Escalation) -> str | None:
    """The pipeline's own recommendation; outside pipelines the service has none to give."""
    stored = (row.pipeline or {}).get("advisory")
    if isinstance(stored, Mapping) and "recommended_action" in stored:
        return advisory(case_of(row))["recommended_action"]
    return None


def deadline_of(row: Escalation, design: Design) -> tuple[str, datetime | None]:
    """The timeout action and when it applies (routed + the tier's timeout)."""
    facts = route_facts(design, case_of(row))
    routed = as_utc(row.routed_at)
    extended = timedelta(seconds=row.extended_seconds or 0)
    return facts.timeout_action, routed + facts.timeout + extended if routed else None


def acknowledged_by(events: Sequence[TimedEvent]) -> str | None:
    """Who acknowledged the case last, from its timeline."""
    for _at, kind, detail in reversed(events):
        if kind == "acknowledged":
            return str(detail.get("by"))
    return None


def card(
    row: Escalation,
    *,
    now: datetime,
    decision: Decision | None = None,
    events: Sequence[TimedEvent] = (),
) -> dict[str, Any]:
    """What one case shows: question once, countdown, badges, last attempts, evidence links."""
    state = State(row.state)
    packet = row.packet or {}
    is_open = state not in TERMINAL
    result: dict[str, Any] = {
        "id": row.id,
        "run_id": row.run_id,
        "severity": row.severity,
        "trigger": row.trigger_type,
        "state": row.state,
        "state_words": STATE_WORDS.get(row.state, row.state),
        "created_at": as_utc(row.created_at),
        "question": packet.get("requested_action") or None,
        "blocked_on": packet.get("blocked_on"),
        "recipient": packet.get("recipient"),
        "problems": list(row.problems),
        "open": is_open,
        "answerable": state in OPEN_FOR_DECISION and decision is None,
        "evidence": [
            {"kind": e.get("kind"), "ref": e.get("ref"), "href": safe_link(e.get("ref"))}
            for e in packet.get("evidence") or []
            if isinstance(e, Mapping)
        ],
        "attempts": last_attempts(events),
        "recommendation": recommendation(row),
        "note": (row.pipeline or {}).get("note"),
        "answers": [],
        "countdown": None,
        "badges": (),
        "closed": closed_summary(
            option=decision.option if decision else None,
            decided_by=decision.decided_by if decision else None,
            at=as_utc(decision.at) if decision else None,
            is_default=decision.is_default if decision else False,
        ),
    }
    deadline = None
    if row.design and row.packet:
        try:
            design = design_of(row)
        except DesignError as broken:  # a parked case may be parked for exactly this: show it
            result["problems"].append(str(broken))
        else:
            action, deadline = deadline_of(row, design)
            if is_open and state in OPEN_FOR_DECISION:
                result["countdown"] = countdown(action, deadline, now=now)
            result["tier"] = design.tier(row.severity).recipient.primary
            risky = destructive_labels(reply_context(row, design))
            result["answers"] = [
                _answerable(row.id, o, o.label in risky) for o in case_of(row).options
            ]
    result["deadline"] = deadline
    result["badges"] = badges(
        state=row.state,
        deadline=deadline,
        acknowledged_by=acknowledged_by(events),
        decided_at=as_utc(row.decided_at),
        resumed_at=as_utc(row.resumed_at),
        now=now,
    ) + ((Badge("parked", "parked"),) if state is State.DEAD_LETTER else ())
    return result


def _answerable(case_id: str, option: Option, destructive: bool) -> Answerable:
    href = f"/dashboard/cases/{case_id}/answer?{urlencode({'option': option.label})}"
    return Answerable(option.label, option.description, destructive, href)


def timed(events: Sequence[Event]) -> list[TimedEvent]:
    return [(as_utc(e.at), e.kind, e.detail) for e in events]
