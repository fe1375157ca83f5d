"""How cases look over HTTP and in the CLI: plain JSON, no secrets (none are ever stored)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from models.store import as_utc, decision_json
from models.tables import Decision, Delivery, Escalation, Event, Reply


def _iso(moment: datetime | None) -> str | None:
    moment = as_utc(moment)
    return moment.isoformat() if moment else None


def escalation_summary(row: Escalation) -> dict[str, Any]:
    return {
        "id": row.id,
        "run_id": row.run_id,
        "packet_id": row.packet_id,
        "severity": row.severity,
        "trigger_type": row.trigger_type,
        "state": row.state,
        "outcome": row.outcome,
        "question": (row.packet or {}).get("requested_action"),
        "created_at": _iso(row.created_at),
        "next_action_at": _iso(row.next_action_at),
        "closed_at": _iso(row.closed_at),
    }


def escalation_detail(
    row: Escalation, decision: Decision | None, deliveries: list[Delivery]
) -> dict[str, Any]:
    return {
        **escalation_summary(row),
        "packet": row.packet,
        "snapshot": row.snapshot,
        "options": row.options,
        "wake": row.wake,
        "problems": row.problems,
        "cites_id": row.cites_id,
        "design_hash": row.design_hash,
        "routed_at": _iso(row.routed_at),
        "followed_up_at": _iso(row.followed_up_at),
        "decided_at": _iso(row.decided_at),
        "decision": decision_json(decision) if decision else None,
        "deliveries": [
            {
                "id": d.id,
                "purpose": d.purpose,
                "channel": d.target,
                "role": d.role,
                "state": d.state,
                "attempts": d.attempts,
                "last_error": d.last_error,
                "sent_at": _iso(d.sent_at),
            }
            for d in deliveries
        ],
    }


def event_json(event: Event) -> dict[str, Any]:
    return {
        "id": event.id,
        "at": _iso(event.at),
        "kind": event.kind,
        "state": event.state,
        "detail": event.detail,
    }


def reply_json(reply: Reply) -> dict[str, Any]:
    return {
        "id": reply.id,
        "at": _iso(reply.at),
        "channel": reply.channel,
        "sender": reply.sender,
        "text": reply.raw_text,
        "option": reply.option,
        "matched_by": reply.matched_by,
        "outcome": reply.outcome,
    }
