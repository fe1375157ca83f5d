"""Acknowledged wakes: the run says it took the decision; unacknowledged ones are re-sent.

Two kinds of wake go through the same code: a case's own (its wake id is the case id) and a
task's blocker set's (`task-<n>`, workers/blockers.py), whose acknowledgement stands for
every blocker it carried. Both tables hold the same four columns (resumed_at, resumed_via,
ack_due_at, wake_redeliveries); a `_Wakes` says what differs.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select, update

from models.db import transaction
from models.sql import one_of
from models.store import add_event, lock_escalation
from models.tables import Delivery, Escalation, TaskWait
from workers import names
from workers.runtime import Runtime
from workflows import payloads
from workflows.blockers import wake_purpose
from workflows.errors import LinkRefused, NotFound
from workflows.payloads import AckedWake, AckInstructions, Payload
from workflows.stage_results import DeliveryState, Purpose, StageResult
from workflows.states import State
from workflows.wake_acks import (
    AckAction,
    AckPolicy,
    ResumedVia,
    first_ack_due,
    next_ack_step,
    task_wait_of,
    task_wake_id,
)

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


def with_ack(
    runtime: Runtime,
    result: StageResult,
    *,
    wake_id: str,
    now: datetime,
    task_wait_id: int | None = None,
) -> StageResult:
    """The close stage's result with its wake payloads carrying the ack, and the deadline.
    A blocker of a task's open set (`task_wait_id`) with no wake of its own is woken by the
    task's wake: its clock is the task's, not its own."""
    ack = ack_instructions(runtime, wake_id)
    wakes = (Purpose.WAKE_TASK, Purpose.WAKE_WEBHOOK)

    def acked(payload: Payload) -> AckedWake:
        return {**payloads.case_wake(payload), "wake_id": wake_id, "ack": ack}

    outbound = tuple(
        replace(item, payload=acked(item.payload)) if item.purpose in wakes else item
        for item in result.outbound
    )
    own = any(item.purpose in wakes for item in outbound)
    due = first_ack_due(policy_of(runtime), closed_at=now) if own or task_wait_id is None else None
    updates = replace(result.updates, ack_due_at=due, task_wait_id=task_wait_id)
    return replace(result, outbound=outbound, updates=updates)


Holder = Escalation | TaskWait


@dataclass(frozen=True)
class _Wakes:
    """One kind of wake: the table holding its acknowledgement, and what differs by kind."""

    table: type[Escalation] | type[TaskWait]
    cases: Callable[[Session, Any], list[Escalation]]  # whose decisions it carried
    outbox: Callable[[Any], tuple[Any, ...]]  # the conditions selecting its wake's sends
    gave_up: Callable[[Session, Any], None]
    detail: Callable[[Any], dict[str, Any]]  # added to the events on its cases


def _own_case(_session: Session, row: Escalation) -> list[Escalation]:
    return [row]


def _blocker_cases(session: Session, wait: TaskWait) -> list[Escalation]:
    found = (lock_escalation(session, i) for i in wait.escalation_ids)
    return [row for row in found if row is not None]


# A send of these may still reach the run: its acknowledgement is not late yet. Unlike
# UNSENT, a send in flight counts, and one whose outcome is unknown does not (it may have
# arrived; it is sent again like a finished one).
_UNDER_WAY = (
    DeliveryState.PENDING,
    DeliveryState.SENDING,
    DeliveryState.FAILED,  # retried at its next attempt
    DeliveryState.WAITING,
)


def _under_way(session: Session, where: tuple[Any, ...]) -> bool:
    found = session.exec(
        select(Delivery.id).where(*where, col(Delivery.state).in_(_UNDER_WAY)).limit(1)
    ).first()
    return found is not None


def _resend(session: Session, now: datetime, where: tuple[Any, ...]) -> set[str]:
    """Put a wake's finished outbox rows back to pending; a refused webhook stays refused."""
    condition = (*where, col(Delivery.state) != DeliveryState.REFUSED)
    session.execute(
        update(Delivery)
        .where(*condition)
        .values(state=DeliveryState.PENDING, attempts=0, next_attempt_at=now, lease_until=None)
    )
    return set(session.exec(select(Delivery.escalation_id).where(*condition)).all())


def _case_outbox(row: Escalation) -> tuple[Any, ...]:
    return (
        col(Delivery.escalation_id) == row.id,
        col(Delivery.purpose).in_([Purpose.WAKE_TASK, Purpose.WAKE_WEBHOOK]),
    )


def _task_outbox(wait: TaskWait) -> tuple[Any, ...]:
    # The wake's row belongs to one of the set's cases: found by their index, not by
    # reading the whole outbox for its purpose.
    return (
        col(Delivery.escalation_id).in_(list(wait.escalation_ids)),
        col(Delivery.purpose) == wake_purpose(wait.id or 0),
    )


def _case_gave_up(_session: Session, _row: Escalation) -> None:
    """Nothing more: the case reads as decided, not resumed, by its own columns."""


def _task_gave_up(session: Session, wait: TaskWait) -> None:
    """The task never said it resumed: its blockers fall back to showing decided, not
    resumed, each by its own columns."""
    session.execute(
        update(Escalation)
        .where(
            col(Escalation.id).in_(list(wait.escalation_ids)),  # by key, not by a scan
            col(Escalation.task_wait_id) == wait.id,
            col(Escalation.resumed_at).is_(None),
        )
        .values(task_wait_id=None)
    )


CASE_WAKES = _Wakes(Escalation, _own_case, _case_outbox, _case_gave_up, lambda _row: {})
TASK_WAKES = _Wakes(
    TaskWait,
    _blocker_cases,
    _task_outbox,
    _task_gave_up,
    lambda wait: {"task": wait.task, "wake_id": task_wake_id(wait.id)},
)
KINDS = (CASE_WAKES, TASK_WAKES)


def _sent(session: Session, wake_id: str) -> tuple[_Wakes, Holder]:
    """The locked row holding this wake's acknowledgement; NotFound until it was sent."""
    wait_id = task_wait_of(wake_id)
    if wait_id is None:
        row = lock_escalation(session, wake_id)
        if row is None:
            raise NotFound(f"no wake {wake_id}")
        if row.state != State.CLOSED:
            raise NotFound(f"wake {wake_id} has not been sent: the case is {row.state}")
        return CASE_WAKES, row
    wait = session.exec(select(TaskWait).where(TaskWait.id == wait_id).with_for_update()).first()
    if wait is None:
        raise NotFound(f"no wake {wake_id}")
    if wait.woken_at is None:
        raise NotFound(f"wake {wake_id} has not been sent: the task has open blockers")
    return TASK_WAKES, wait


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
        kind, holder = _sent(session, wake_id)
        first = holder.resumed_at is None
        if first:
            _mark_resumed(session, kind, holder, via, now=now)
        return {"wake_id": wake_id, "resumed_at": holder.resumed_at, "first": first}


def resumed_by_delivery(session: Session, delivery: Delivery, *, now: datetime) -> None:
    """A shell loop's BLOCKED.md replaced, or a pipeline's command file written: for those
    runs, that is the resume (nothing else of theirs can call back)."""
    via = RESUMED_BY_WRITING.get(delivery.purpose)
    if via is None:
        return
    row = lock_escalation(session, delivery.escalation_id)
    if row is not None and row.resumed_at is None:
        _mark_resumed(session, CASE_WAKES, row, via, now=now)


def _mark_resumed(
    session: Session, kind: _Wakes, holder: Holder, via: ResumedVia, *, now: datetime
) -> None:
    detail = {"via": via.value, **kind.detail(holder)}
    holder.resumed_at, holder.resumed_via, holder.ack_due_at = now, via, None
    session.add(holder)
    for row in kind.cases(session, holder):  # the case itself, or every blocker carried
        if row is holder or row.resumed_at is None:
            row.resumed_at, row.resumed_via, row.ack_due_at = now, via, None
            session.add(row)
            add_event(session, row, "resumed", detail, now=now)


def redeliver_due(runtime: Runtime, *, now: datetime, limit: int = 200) -> list[str]:
    """Wakes whose acknowledgement is overdue, of either kind: send them again, or, after the
    last try, stop waiting and record that the run never said it resumed. Returns the cases
    whose outbox is due again."""
    policy = policy_of(runtime)
    again: set[str] = set()
    with transaction(runtime.engine) as session:
        for kind in KINDS:
            again |= _redeliver(session, kind, policy, now=now, limit=limit)
    return sorted(again)


def _redeliver(
    session: Session, kind: _Wakes, policy: AckPolicy, *, now: datetime, limit: int
) -> set[str]:
    table: Any = kind.table
    again: set[str] = set()
    due = session.exec(
        select(table)
        .where(col(table.ack_due_at) <= now, col(table.resumed_at).is_(None))
        .order_by(col(table.ack_due_at))
        .limit(limit)
    ).all()
    for row in due:
        outbox = kind.outbox(row)
        step = next_ack_step(
            policy,
            redelivered=row.wake_redeliveries,
            now=now,
            send_under_way=_under_way(session, outbox),
        )
        redeliver = step.action is AckAction.REDELIVER
        # Claim with a conditional update, so a second beat does nothing twice.
        claimed = session.execute(
            update(table)
            .where(col(table.id) == row.id, col(table.ack_due_at) == row.ack_due_at)
            .values(
                ack_due_at=step.next_due, wake_redeliveries=row.wake_redeliveries + int(redeliver)
            )
        )
        if claimed.rowcount != 1 or step.action is AckAction.AWAIT_SEND:  # type: ignore[attr-defined]
            continue
        if redeliver:
            again |= _resend(session, now, outbox)
        else:
            kind.gave_up(session, row)
        detail = {"redeliveries": row.wake_redeliveries, **kind.detail(row)}
        what = "wake_redelivered" if redeliver else "not_resumed"
        for case in kind.cases(session, row):
            if case.resumed_at is None:
                add_event(session, case, what, detail, now=now)
    return again


def _not_resumed() -> tuple[Any, ...]:
    """Closed cases whose run never acknowledged its wake, after every redelivery: the
    predicate of the partial index ix_escalations_not_resumed, the state written in as it is."""
    return (
        one_of(col(Escalation.state), [State.CLOSED]),
        col(Escalation.resumed_at).is_(None),
        col(Escalation.ack_due_at).is_(None),
        # a blocker's run is woken by its task: that wake has not given up yet
        col(Escalation.task_wait_id).is_(None),
    )


def not_resumed_ids(session: Session, *, limit: int) -> list[str]:
    """Closed cases whose run never acknowledged its wake, latest closed first."""
    return list(
        session.exec(
            select(Escalation.id)
            .where(*_not_resumed())
            .order_by(col(Escalation.closed_at).desc())
            .limit(limit)
        ).all()
    )


def not_resumed_count(session: Session) -> int:
    """How many cases `not_resumed_ids` would list, counted on its index."""
    return session.exec(select(func.count()).select_from(Escalation).where(*_not_resumed())).one()
