"""Moving an open case to another tier on a locked row: the new pages in, the old ones out."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime

from sqlmodel import Session, col, select

from models.db import transaction
from models.store import add_event, case_of, design_of, lock_escalation
from models.tables import Delivery, Escalation
from workers.per_channel import per_channel
from workers.runtime import Runtime
from workers.stage_runs import nudge
from workflows.errors import Conflict, NotFound
from workflows.reassignment import reassignment
from workflows.stage_results import (
    PAGES,
    UNSENT,
    DeliveryState,
    Outbound,
    Stage,
    StageResult,
)


def reassign(runtime: Runtime, escalation_id: str, *, to: str, by: str, reason: str) -> str:
    """Reassign the case to tier `to`; returns the tier it left. Raises NotFound, Conflict
    or InvalidInput (workflows/reassignment.py)."""
    now = datetime.now(UTC)
    with transaction(runtime.engine) as session:
        row = lock_escalation(session, escalation_id)
        if row is None:
            raise NotFound(f"no escalation {escalation_id}")
        if not row.design or not row.packet:
            raise Conflict(f"escalation {escalation_id} is {row.state}: it has no tier")
        done = reassignment(
            case_of(row),
            design_of(row),
            to=to,
            by=by,
            reason=reason,
            public_url=runtime.settings.resolved_public_url,
            now=now,
        )
        left = row.severity
        _cancel_old_pages(session, row, to=to, now=now)
        row.packet, row.severity, row.state = done.packet, to, done.state
        row.next_action_at, row.routed_at, row.followed_up_at = done.next_action_at, now, None
        row.extended_seconds, row.attempts, row.updated_at = 0, 0, now
        session.add(row)
        add_event(session, row, done.event.kind, done.event.detail, now=now)
        pages = per_channel(runtime, StageResult(state=done.state, events=(), outbound=done.pages))
        for page in pages.outbound:
            _page_again(session, row.id, page, now=now)
    nudge(runtime.app, Stage.DELIVER, escalation_id)
    return left


def _cancel_old_pages(session: Session, row: Escalation, *, to: str, now: datetime) -> None:
    """The old tier's follow-up and next-tier pages still queued are not sent."""
    queued = session.exec(
        select(Delivery).where(
            Delivery.escalation_id == row.id,
            col(Delivery.purpose).in_(list(PAGES)),
            col(Delivery.state).in_(list(UNSENT)),
        )
    ).all()
    for delivery in queued:
        delivery.state, delivery.lease_until = DeliveryState.CANCELLED, None
        session.add(delivery)
        detail = {
            "delivery": delivery.id,
            "purpose": delivery.purpose,
            "channel": delivery.target,
            "why": f"reassigned to the {to} tier",
        }
        add_event(session, row, "delivery_cancelled", detail, now=now)


def _page_again(session: Session, escalation_id: str, page: Outbound, *, now: datetime) -> None:
    """One outbox row per (purpose, channel): a channel paged before is paged again in its
    row, reset (its earlier attempts stay on the timeline)."""
    fields = {**asdict(page), "payload": dict(page.payload)}
    not_before = fields.pop("not_before")  # the new tier's working hours may hold it
    later = not_before is not None and not_before > now
    state = DeliveryState.WAITING if later else DeliveryState.PENDING
    due = not_before if later else now
    found = session.exec(
        select(Delivery).where(
            Delivery.escalation_id == escalation_id,
            Delivery.purpose == page.purpose,
            Delivery.target == page.target,
            Delivery.step == page.step,
        )
    ).first()
    if found is None:
        session.add(
            Delivery(
                escalation_id=escalation_id,
                **fields,
                state=state,
                next_attempt_at=due,
                created_at=now,
            )
        )
        return
    for name, value in fields.items():
        setattr(found, name, value)
    found.state, found.attempts, found.last_error = state, 0, None
    found.next_attempt_at, found.lease_until, found.sent_at = due, None, None
    session.add(found)
