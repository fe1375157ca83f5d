"""Acknowledged wakes: the run says it took the decision; unacknowledged ones are re-sent."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlmodel import Session, col, select, update

from models.db import transaction
from models.store import add_event, lock_escalation
from models.tables import Delivery, Escalation
from workers import names
from workers.runtime import Runtime
from workflows import payloads
from workflows.errors import LinkRefused, NotFound
from workflows.payloads import AckedWake, AckInstructions, Payload
from workflows.stage_results import DeliveryState, Purpose, StageResult
from workflows.states import State
from workflows.wake_acks import AckPolicy, ResumedVia, first_ack_due, next_ack_step

RESUMED_BY_WRITING: dict[str, ResumedVia] = {
    Purpose.UNBLOCK: ResumedVia.BLOCKED_FILE_REMOVED,
    Purpose.COMMAND_FILE: ResumedVia.COMMAND_FILE_WRITTEN,
}


def policy_of(runtime: Runtime) -> AckPolicy:
    settings = runtime.settings
    return AckPolicy(timedelta(seconds=settings.wake_ack_wait), settings.wake_redeliveries)


def ack_token(key: str, wake_id: str) -> str:
    """The capability a wake carries to acknowledge itself, without the API token."""
    return hmac.new(key.encode(), f"wake-ack:{wake_id}".encode(), hashlib.sha256).hexdigest()[:32]


def ack_instructions(runtime: Runtime, wake_id: str) -> AckInstructions:
    """What a woken run calls to say it resumed: an HTTP POST, or a Celery task by name."""
    token = ack_token(runtime.answer_key, wake_id)
    return AckInstructions(
        url=f"{runtime.settings.resolved_public_url}/v1/wakes/{wake_id}/ack",
        token=token,
        task=names.ACK_WAKE,
        queue=runtime.settings.queue,
        args=[wake_id, token],
    )


def with_ack(runtime: Runtime, result: StageResult, *, wake_id: str, now: datetime) -> StageResult:
    """The close stage's result with its wake payloads carrying the ack, and the deadline."""
    ack = ack_instructions(runtime, wake_id)

    def acked(payload: Payload) -> AckedWake:
        return {**payloads.case_wake(payload), "wake_id": wake_id, "ack": ack}

    outbound = tuple(
        replace(item, payload=acked(item.payload))
        if item.purpose in (Purpose.WAKE_TASK, Purpose.WAKE_WEBHOOK)
        else item
        for item in result.outbound
    )
    due = first_ack_due(policy_of(runtime), closed_at=now)
    return replace(result, outbound=outbound, updates=replace(result.updates, ack_due_at=due))


def acknowledge(
    runtime: Runtime, wake_id: str, *, via: ResumedVia, token: str | None = None
) -> dict[str, Any]:
    """Record that the run resumed; the first acknowledgement counts, repeats change nothing.
    With a `token`, it must be the wake's own (the caller holds no API token)."""
    if token is not None and not hmac.compare_digest(
        token.encode(), ack_token(runtime.answer_key, wake_id).encode()
    ):
        raise LinkRefused("this acknowledgement token is not the wake's")
    now = datetime.now(UTC)
    with transaction(runtime.engine) as session:
        row = lock_escalation(session, wake_id)
        if row is None:
            raise NotFound(f"no wake {wake_id}")
        if row.state != State.CLOSED:
            raise NotFound(f"wake {wake_id} has not been sent: the case is {row.state}")
        first = row.resumed_at is None
        if first:
            _mark_resumed(session, row, via, now=now)
        return {"wake_id": wake_id, "resumed_at": row.resumed_at, "first": first}


def resumed_by_delivery(session: Session, delivery: Delivery, *, now: datetime) -> None:
    """A shell loop's BLOCKED.md replaced, or a pipeline's command file written: for those
    runs, that is the resume (nothing else of theirs can call back)."""
    via = RESUMED_BY_WRITING.get(delivery.purpose)
    if via is None:
        return
    row = lock_escalation(session, delivery.escalation_id)
    if row is not None and row.resumed_at is None:
        _mark_resumed(session, row, via, now=now)


def _mark_resumed(session: Session, row: Escalation, via: ResumedVia, *, now: datetime) -> None:
    row.resumed_at, row.resumed_via, row.ack_due_at = now, via, None
    session.add(row)
    add_event(session, row, "resumed", {"via": via.value}, now=now)


def redeliver_due(runtime: Runtime, *, now: datetime, limit: int = 200) -> list[str]:
    """Closed cases whose acknowledgement is overdue: send their wakes again, or, after the
    last try, stop waiting and record that the run never said it resumed."""
    policy = policy_of(runtime)
    again: list[str] = []
    with transaction(runtime.engine) as session:
        due = session.exec(
            select(Escalation)
            .where(col(Escalation.ack_due_at) <= now, col(Escalation.resumed_at).is_(None))
            .order_by(col(Escalation.ack_due_at))
            .limit(limit)
        ).all()
        for row in due:
            step = next_ack_step(policy, redelivered=row.wake_redeliveries, now=now)
            # Claim with a conditional update, so a second beat does nothing twice.
            claimed = session.execute(
                update(Escalation)
                .where(
                    col(Escalation.id) == row.id,
                    col(Escalation.ack_due_at) == row.ack_due_at,
                )
                .values(
                    ack_due_at=step.next_due,
                    wake_redeliveries=row.wake_redeliveries + int(step.redeliver),
                )
            )
            if claimed.rowcount != 1:  # type: ignore[attr-defined]
                continue
            if step.redeliver:
                _resend_wakes(session, row.id, now=now)
                add_event(session, row, "wake_redelivered", _attempt(row), now=now)
                again.append(row.id)
            else:
                add_event(session, row, "not_resumed", _attempt(row), now=now)
    return again


def _attempt(row: Escalation) -> Mapping[str, Any]:
    return {"redeliveries": row.wake_redeliveries}


def _resend_wakes(session: Session, escalation_id: str, *, now: datetime) -> None:
    session.execute(
        update(Delivery)
        .where(
            col(Delivery.escalation_id) == escalation_id,
            col(Delivery.purpose).in_([Purpose.WAKE_TASK, Purpose.WAKE_WEBHOOK]),
            col(Delivery.state) != DeliveryState.REFUSED,
        )
        .values(state=DeliveryState.PENDING, attempts=0, next_attempt_at=now, lease_until=None)
    )


def not_resumed_ids(session: Session, *, limit: int) -> list[str]:
    """Closed cases whose run never acknowledged its wake, after every redelivery."""
    return list(
        session.exec(
            select(Escalation.id)
            .where(
                col(Escalation.state) == State.CLOSED,
                col(Escalation.resumed_at).is_(None),
                col(Escalation.ack_due_at).is_(None),
            )
            .order_by(col(Escalation.closed_at).desc())
            .limit(limit)
        ).all()
    )
