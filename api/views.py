"""How cases look over HTTP: the rows as public models, no secrets (none are ever stored)."""

from __future__ import annotations

from typing import Any

from fastapi import Response, status

from api.schemas import (
    AnswerPublic,
    DecisionPublic,
    DeliveryPublic,
    EscalationAccepted,
    EscalationPublic,
    EscalationSummary,
    EventPublic,
    InboundAnswer,
    ReplyPublic,
)
from models.store import decision_json, iso, resolution_of
from models.tables import Decision, Delivery, Escalation, Event, Reply
from workers.answers import Answer
from workers.intake import Accepted
from workers.runtime import Runtime
from workers.stage_runs import nudge
from workflows.stage_results import Stage

JOINED_NOTE = "the same open question as escalation {id}: joined it; nobody is paged again"


def answer_accepted(
    runtime: Runtime, accepted: Accepted, response: Response, *, public_url: str
) -> EscalationAccepted:
    """Nudge a new case's first stage; 201 for a new case, 200 for a resend or a join."""
    if accepted.state == "received":
        nudge(runtime.app, Stage.SNAPSHOT, accepted.id)
    if not accepted.created:
        response.status_code = status.HTTP_200_OK
    return EscalationAccepted(
        id=accepted.id,
        state=accepted.state,
        created=accepted.created,
        joined=accepted.joined,
        note=JOINED_NOTE.format(id=accepted.id) if accepted.joined else None,
        warnings=list(accepted.warnings),
        url=f"{public_url}/v1/escalations/{accepted.id}",
    )


def _summary_fields(row: Escalation) -> dict[str, object]:
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


def escalation_summary(row: Escalation) -> EscalationSummary:
    return EscalationSummary.model_validate(_summary_fields(row))


def decision_public(decision: Decision | None) -> DecisionPublic | None:
    return DecisionPublic.model_validate(decision_json(decision)) if decision else None


def escalation_detail(
    row: Escalation,
    decision: Decision | None,
    deliveries: list[Delivery],
    reasons: list[dict[str, Any]] | None = None,
) -> EscalationPublic:
    return EscalationPublic.model_validate(
        {
            **_summary_fields(row),
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
            # Proof the run took its decision: the wake acknowledged, or the file it reads.
            "resumed": {
                "at": iso(row.resumed_at),
                "via": row.resumed_via,
                "redeliveries": row.wake_redeliveries,
                "ack_due_at": iso(row.ack_due_at),
            },
            "acknowledged_by": row.acknowledged_by,
            "acknowledged_at": iso(row.acknowledged_at),
            "decision": decision_public(decision),
            "reasons": reasons or [],
            "pipeline": _pipeline_view(row, decision),
            "deliveries": [delivery_public(d) for d in deliveries],
        }
    )


def delivery_public(delivery: Delivery) -> DeliveryPublic:
    return DeliveryPublic(
        id=delivery.id,
        purpose=delivery.purpose,
        channel=delivery.target,
        role=delivery.role,
        state=delivery.state,
        attempts=delivery.attempts,
        last_error=delivery.last_error,
        sent_at=iso(delivery.sent_at),
        step=delivery.step,
        due_at=iso(delivery.next_attempt_at) if delivery.state == "waiting" else None,
    )


def _pipeline_view(row: Escalation, decision: Decision | None) -> dict[str, object] | None:
    """A pipeline case's offer and, once decided, the command the orchestrator runs."""
    if not row.pipeline:
        return None
    shown = {k: v for k, v in row.pipeline.items() if k != "reply_token"}  # the code is a key
    return {**shown, "command": decision.value if decision else None}


def event_public(event: Event) -> EventPublic:
    return EventPublic(
        id=event.id, at=iso(event.at), kind=event.kind, state=event.state, detail=event.detail
    )


def reply_public(reply: Reply) -> ReplyPublic:
    return ReplyPublic(
        id=reply.id,
        at=iso(reply.at),
        channel=reply.channel,
        sender=reply.sender,
        text=reply.raw_text,
        option=reply.option,
        matched_by=reply.matched_by,
        outcome=reply.outcome,
    )


def answer_public(result: Answer) -> AnswerPublic:
    return AnswerPublic.model_validate(
        {
            "id": result.escalation_id,
            "outcome": result.outcome,
            "message": result.message,
            "option": result.option,
            "decision": result.decision,
        }
    )


def inbound_answer(result: Answer) -> InboundAnswer:
    return InboundAnswer.model_validate(
        {
            "id": result.escalation_id,
            "outcome": result.outcome,
            "understood": result.option,
            "message": result.message,
            "decision": result.decision,
        }
    )
