"""Recording an operator's acknowledgement on a locked case, and stopping what it stops."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlmodel import Session, col, select

from models.db import transaction
from models.store import add_event, design_of, lock_escalation
from models.tables import Delivery, Escalation
from workers.runtime import Runtime
from workflows.acknowledgements import acknowledgement, stopped_by_ack
from workflows.errors import NotFound
from workflows.stage_results import DeliveryState
from workflows.states import State

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
        event = acknowledgement(row.id, State(row.state), by=by, reason=reason)
        add_event(session, row, event.kind, event.detail, now=now)
        stop_for_ack(session, row, by=by, now=now)


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
    for delivery in waiting:
        delivery.state = DeliveryState.CANCELLED  # its due time stays, for the record
        session.add(delivery)
    if waiting:
        add_event(
            session,
            row,
            "pages_stopped",
            {
                "by": by,
                "why": "acknowledged",
                "deliveries": [d.id for d in waiting],
                "purposes": sorted({d.purpose for d in waiting}),
            },
            now=now,
        )
