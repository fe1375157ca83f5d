"""Recording an operator's acknowledgement on a locked case (from the dashboard, or from
chat), and stopping the pages it stops."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlmodel import Session, col, select

from models.db import transaction
from models.store import add_event, case_of, design_of, lock_escalation, stop_pages
from models.tables import Delivery, Escalation, Event
from workers.answers import Answer
from workers.runtime import Runtime
from workflows.acknowledgements import acknowledgement, read_acknowledgement, stopped_by_ack
from workflows.errors import NotFound
from workflows.judgement import ReplyOutcome
from workflows.secrets import scan_text
from workflows.stage_results import DeliveryState
from workflows.states import OPEN_FOR_DECISION, State

# Pages not yet on their way: a row being sent (or already sent) is left as it is.
_NOT_SENT = (DeliveryState.WAITING, DeliveryState.PENDING, DeliveryState.FAILED)


def acknowledge(runtime: Runtime, escalation_id: str, *, by: str, reason: str) -> None:
    """Append an `acknowledged` event, record who is on it, cancel the reminders and the
    pages the tier's chain stops on an ack; raises NotFound, Conflict (closed) or InvalidInput."""
    now = datetime.now(UTC)
    with transaction(runtime.engine) as session:
        row = lock_escalation(session, escalation_id)
        if row is None:
            raise NotFound(f"no escalation {escalation_id}")
        _record(session, row, by=by, reason=reason, now=now)


def _record(
    session: Session,
    row: Escalation,
    *,
    by: str,
    reason: str,
    now: datetime,
    via: dict[str, object] | None = None,
) -> None:
    event = acknowledgement(row.id, State(row.state), by=by, reason=reason)
    add_event(session, row, event.kind, {**event.detail, **(via or {})}, now=now)
    stop_for_ack(session, row, by=by, now=now)


def acknowledge_from_chat(
    runtime: Runtime,
    escalation_id: str,
    *,
    text: str,
    by: str,
    channel: str,
    message_id: str | None,
    verified: bool,
) -> Answer | None:
    """'<code> ack' / 'on it' (or an Ack button) on an open case: who is on it, recorded once
    per platform message. None when the words are not an acknowledgement, or the case is no
    longer open: the judge then reads them as any reply (a late one is told the decision)."""
    now = datetime.now(UTC)
    with transaction(runtime.engine) as session:
        row = lock_escalation(session, escalation_id)
        if row is None:
            raise NotFound(f"no escalation {escalation_id}")
        reading = read_acknowledgement(text, case_of(row).options)
        if reading is None or State(row.state) not in OPEN_FOR_DECISION:
            return None
        if scan_text(reading.reason):  # the judge withholds it, as any reply with a secret
            return None
        told = (
            f"Recorded: {by} is on case {row.id}. Nothing is decided; answer with the code "
            "and your choice when you are ready."
        )
        if message_id and _seen(session, row.id, channel, message_id):
            return Answer(row.id, ReplyOutcome.DUPLICATE, "Already received this message.")
        reason = reading.reason or f"said so on {channel}"
        # `verified`: the platform vouched for who it is (an ntfy press or a bridge did not).
        via = {"channel": channel, "verified": verified}
        if message_id:
            via["message_id"] = message_id
        _record(session, row, by=by, reason=reason, now=now, via=via)
        return Answer(row.id, ReplyOutcome.ACKNOWLEDGED, told)


def _seen(session: Session, escalation_id: str, channel: str, message_id: str) -> bool:
    events = session.exec(
        select(Event).where(Event.escalation_id == escalation_id, Event.kind == "acknowledged")
    )
    return any(
        e.detail.get("channel") == channel and e.detail.get("message_id") == message_id
        for e in events
    )


def stop_for_ack(session: Session, row: Escalation, *, by: str, now: datetime) -> None:
    """What any acknowledgement does besides its event (dashboard, chat or button alike):
    who is on it, and the waiting reminders (and chain levels, if it stops on ack) cancelled."""
    row.acknowledged_by = by
    row.acknowledged_at = row.acknowledged_at or now
    row.updated_at = now
    session.add(row)
    stopped = stopped_by_ack(design_of(row).tier(row.severity))
    waiting = session.exec(
        select(Delivery).where(
            Delivery.escalation_id == row.id,
            col(Delivery.purpose).in_(stopped),
            col(Delivery.state).in_(_NOT_SENT),
        )
    ).all()
    stop_pages(
        session,
        row,
        waiting,
        {"by": by, "why": "acknowledged", "purposes": sorted({d.purpose for d in waiting})},
        now=now,
    )
