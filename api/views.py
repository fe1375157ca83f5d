"""How cases look over HTTP and in the CLI: plain JSON, no secrets (none are ever stored)."""

from __future__ import annotations

from typing import Any

from fastapi import Response, status

from models.store import decision_json, iso, resolution_of
from models.tables import Decision, Delivery, Escalation, Event, Reply
from workers.intake import Accepted
from workers.runtime import Runtime
from workers.stage_runs import nudge
from workflows.stage_results import Stage


def answer_accepted(
    runtime: Runtime, accepted: Accepted, response: Response, *, public_url: str
) -> dict[str, Any]:
    """Nudge a new case's first stage; 201 for a new case, 200 for a resend or a join."""
    if accepted.state == "received":
        nudge(runtime.app, Stage.SNAPSHOT, accepted.id)
    if not accepted.created:
        response.status_code = status.HTTP_200_OK
    note = f"the same open question as escalation {accepted.id}: joined it; nobody is paged again"
    return {
        "id": accepted.id,
        "state": accepted.state,
        "created": accepted.created,
        "joined": accepted.joined,
        **({"note": note} if accepted.joined else {}),
        "warnings": list(accepted.warnings),
        "url": f"{public_url}/v1/escalations/{accepted.id}",
    }


def escalation_summary(row: Escalation) -> dict[str, Any]:
    return {
        "id": row.id,
        "run_id": row.run_id,
        "packet_id": row.packet_id,
        "severity": row.severity,
        "trigger_type": row.trigger_type,
        "state": row.state,
        "outcome": resolution_of(row),
        "question": (row.packet or {}).get("requested_action"),
        "created_at": iso(row.created_at),
        "next_action_at": iso(row.next_action_at),
        "closed_at": iso(row.closed_at),
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
        "routed_at": iso(row.routed_at),
        "followed_up_at": iso(row.followed_up_at),
        "decided_at": iso(row.decided_at),
        # Proof the run took its decision: the wake acknowledged, or the file it reads written.
        "resumed": {
            "at": iso(row.resumed_at),
            "via": row.resumed_via,
            "redeliveries": row.wake_redeliveries,
            "ack_due_at": iso(row.ack_due_at),
        },
        "decision": decision_json(decision) if decision else None,
        "pipeline": _pipeline_view(row, decision),
        "deliveries": [
            {
                "id": d.id,
                "purpose": d.purpose,
                "channel": d.target,
                "role": d.role,
                "state": d.state,
                "attempts": d.attempts,
                "last_error": d.last_error,
                "sent_at": iso(d.sent_at),
            }
            for d in deliveries
        ],
    }


def _pipeline_view(row: Escalation, decision: Decision | None) -> dict[str, Any] | None:
    """A pipeline case's offer and, once decided, the command the orchestrator runs."""
    if not row.pipeline:
        return None
    return {**row.pipeline, "command": decision.value if decision else None}


def event_json(event: Event) -> dict[str, Any]:
    return {
        "id": event.id,
        "at": iso(event.at),
        "kind": event.kind,
        "state": event.state,
        "detail": event.detail,
    }


def reply_json(reply: Reply) -> dict[str, Any]:
    return {
        "id": reply.id,
        "at": iso(reply.at),
        "channel": reply.channel,
        "sender": reply.sender,
        "text": reply.raw_text,
        "option": reply.option,
        "matched_by": reply.matched_by,
        "outcome": reply.outcome,
    }
