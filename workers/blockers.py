"""A run's task and its one set of open blockers: extended as they come, woken once, at the last."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import String, bindparam, cast
from sqlalchemy import select as sa_select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select, update

from models.db import transaction
from models.tables import Delivery, Escalation, Event, TaskWait, core_table
from workers.outbound import refusal_of
from workers.runtime import Runtime
from workers.wake_acks import ack_instructions, policy_of
from workflows.blockers import (
    Blocker,
    blocker_set_key,
    extend_set,
    ready_to_wake,
    wake_payload,
    wake_purpose,
)
from workflows.errors import Conflict, NotFound, PermanentError
from workflows.intake import check_wake, wake_queue
from workflows.payloads import AckedBlockerWake
from workflows.stage_results import Via
from workflows.states import State
from workflows.wake_acks import first_ack_due, task_wake_id

TASK_WAKE_KEYS = ("task", "queue", "webhook")
LINK_ATTEMPTS = 5  # a link that loses a race to another link or a wake-up reads again


class _Raced(Exception):
    """The open set changed (extended, or claimed by a wake-up) between read and write."""


def _close_record(session: Session, escalation_id: str) -> dict[str, Any] | None:
    closed = session.exec(
        select(Event)
        .where(Event.escalation_id == escalation_id, Event.kind == "closed")
        .order_by(col(Event.id).desc())
    ).first()
    return dict(closed.detail) if closed is not None else None


def _blockers(session: Session, escalation_ids: Sequence[str]) -> list[Blocker]:
    found = []
    for escalation_id in escalation_ids:
        row = session.get(Escalation, escalation_id)
        if row is None:
            continue
        found.append(
            Blocker(
                escalation_id=row.id,
                question=str((row.packet or {}).get("requested_action") or row.packet_id),
                state=row.state,
                close=_close_record(session, row.id) if row.state == "closed" else None,
                outcome=row.outcome,
            )
        )
    return found


def _check_wake(wake: Any, service_queue: str) -> dict[str, str]:
    if not isinstance(wake, dict) or not ({"task", "webhook"} & set(wake)):
        raise PermanentError(
            "wake: say how to wake the task: {task: NAME, queue: QUEUE} and/or {webhook: URL}"
        )
    checked, problems = check_wake(wake, keys=TASK_WAKE_KEYS, service_queue=service_queue)
    if problems:
        raise PermanentError(problems[0])
    return checked


def _open_wait(session: Session, task: str) -> TaskWait | None:
    return session.exec(
        select(TaskWait).where(TaskWait.task == task, col(TaskWait.woken_at).is_(None))
    ).first()


_WAITS = core_table(TaskWait)
# The open sets whose ids' JSON text names the case: a filter in SQL on either dialect (ids
# are hex: no LIKE wildcard in them), confirmed on the parsed list.
_OPEN_SETS_NAMING = sa_select(_WAITS.c.id, _WAITS.c.escalation_ids).where(
    _WAITS.c.woken_at.is_(None),
    cast(_WAITS.c.escalation_ids, String).like(bindparam("quoted")),
)


def open_set_holding(session: Session, escalation_id: str) -> int | None:
    """The task set still waiting on this case, if any: its wake will carry the decision."""
    quoted = f"%{json.dumps(escalation_id)}%"
    for wait_id, ids in session.connection().execute(_OPEN_SETS_NAMING, {"quoted": quoted}):
        if escalation_id in ids:
            return int(wait_id)
    return None


def _carried_by(session: Session, wait_id: int | None, added: Sequence[str]) -> None:
    """Blockers already closed when added: the task's wake now carries their decisions, so
    their acknowledgement is the task's (workers/wake_acks.py)."""
    session.execute(
        update(Escalation)
        .where(
            col(Escalation.id).in_(list(added)),
            col(Escalation.state) == State.CLOSED,
            col(Escalation.resumed_at).is_(None),
        )
        .values(task_wait_id=wait_id, ack_due_at=None)
    )


def _woken_ids(session: Session, task: str) -> set[str]:
    """Every blocker an earlier wake-up of this task carried."""
    woken = session.exec(
        select(TaskWait).where(TaskWait.task == task, col(TaskWait.woken_at).is_not(None))
    ).all()
    return {escalation_id for wait in woken for escalation_id in wait.escalation_ids}


def link(runtime: Runtime, task: str, escalation_ids: Any, wake: Any) -> dict[str, Any]:
    """Add these escalations to the task's open set of blockers (a new set if it has none)."""
    if (
        not isinstance(escalation_ids, list)
        or not escalation_ids
        or not all(isinstance(i, str) and i for i in escalation_ids)
    ):
        raise PermanentError("escalations: must be a non-empty list of escalation ids")
    checked_wake = _check_wake(wake, runtime.settings.queue)
    if "webhook" in checked_wake and (why := refusal_of(checked_wake["webhook"], runtime.outbound)):
        raise PermanentError(f"wake.webhook: {why}")
    requested = list(dict.fromkeys(escalation_ids))
    for _ in range(LINK_ATTEMPTS):
        try:
            return _link_once(runtime, task, requested, checked_wake)
        except (_Raced, IntegrityError):  # another link or a wake-up got there first
            continue
    raise Conflict(f"task {task}: its blockers kept changing; link again")


def _link_once(
    runtime: Runtime, task: str, requested: list[str], wake: dict[str, str]
) -> dict[str, Any]:
    now = datetime.now(UTC)
    with transaction(runtime.engine) as session:
        missing = [i for i in requested if session.get(Escalation, i) is None]
        if missing:
            raise NotFound(f"no escalation {', '.join(missing)}")
        wait = _open_wait(session, task)
        change = extend_set(
            wait.escalation_ids if wait else [], requested, woken=_woken_ids(session, task)
        )
        key = blocker_set_key(change.blockers)
        if wait is not None and (change.changed or wait.wake != wake):
            # Conditional on the version read: a wake-up claiming this set, or another link
            # extending it, in between makes this write nothing, and the link reads again.
            written = session.execute(
                update(TaskWait)
                .where(*_unchanged(wait))
                .values(escalation_ids=list(change.blockers), set_key=key, wake=wake)
            )
            if written.rowcount != 1:  # type: ignore[attr-defined]
                raise _Raced
            _carried_by(session, wait.id, change.added)
        elif wait is None and change.changed:
            # The partial unique index lets one open set per task in: a second link racing
            # this one fails here and reads again.
            created = TaskWait(
                task=task,
                set_key=key,
                escalation_ids=list(change.blockers),
                wake=wake,
                created_at=now,
            )
            session.add(created)
            session.flush()
            _carried_by(session, created.id, change.added)
        shown = change.blockers if (wait is not None or change.changed) else ()
        cards = [blocker.card() for blocker in _blockers(session, shown)]
    return {
        "task": task,
        "blockers": cards,
        "added": list(change.added),
        "already_woken": list(change.already_woken),
        "created": wait is None and change.changed,
    }


def cards(runtime: Runtime, task: str) -> dict[str, Any]:
    """The task's sets of blockers, oldest first, each with its 'Decision needed' cards."""
    with transaction(runtime.engine) as session:
        waits = session.exec(
            select(TaskWait).where(TaskWait.task == task).order_by(col(TaskWait.id))
        ).all()
        return {
            "task": task,
            "waits": [
                {
                    "blockers": [b.card() for b in _blockers(session, wait.escalation_ids)],
                    "woken_at": wait.woken_at.isoformat() if wait.woken_at else None,
                    "wake_id": task_wake_id(wait.id or 0),
                    "resumed_at": wait.resumed_at.isoformat() if wait.resumed_at else None,
                    "redeliveries": wait.wake_redeliveries,
                }
                for wait in waits
            ],
        }


def _unchanged(wait: TaskWait) -> tuple[Any, ...]:
    """The guard of every write to a set: still the version read, and not woken since."""
    return (
        col(TaskWait.id) == wait.id,
        col(TaskWait.woken_at).is_(None),
        col(TaskWait.set_key) == wait.set_key,
    )


def release_ready(runtime: Runtime) -> list[str]:
    """Wake every task whose open set has no open blocker left, once per set; returns the
    escalation ids whose outbox gained a wake-up (their delivery is nudged by the caller)."""
    now = datetime.now(UTC)
    ack_due = first_ack_due(policy_of(runtime), closed_at=now)
    nudged: list[str] = []
    with transaction(runtime.engine) as session:
        for wait in session.exec(select(TaskWait).where(col(TaskWait.woken_at).is_(None))).all():
            blockers = _blockers(session, wait.escalation_ids)
            if len(blockers) != len(wait.escalation_ids) or not ready_to_wake(blockers):
                continue
            # The conditional update is the "exactly once", for this version of the set: a
            # second sweep finds woken_at set, and a blocker added since read changed the
            # key, so neither wakes anything (the next sweep looks at the set as it is).
            claimed = session.execute(
                update(TaskWait).where(*_unchanged(wait)).values(woken_at=now, ack_due_at=ack_due)
            )
            if claimed.rowcount != 1:  # type: ignore[attr-defined]
                continue
            wait_id = wait.id or 0
            # The same acknowledgement as a case's own wake: the run says it took the
            # decisions, or the wake is sent again (workers/wake_acks.py).
            payload: AckedBlockerWake = {
                **wake_payload(wait.task, blockers),
                "wake_id": task_wake_id(wait_id),
                "ack": ack_instructions(runtime, task_wake_id(wait_id)),
            }
            anchor = blockers[-1].escalation_id  # the outbox row hangs on one of the cases
            for channel, target, queue in (
                (Via.CELERY, wait.wake.get("task"), wake_queue(wait.wake)),
                (Via.WEBHOOK, wait.wake.get("webhook"), None),
            ):
                if target:
                    session.add(
                        Delivery(
                            escalation_id=anchor,
                            purpose=wake_purpose(wait_id),
                            channel=channel,
                            target=target,
                            queue=queue,
                            payload={**payload},  # the JSON column's plain dict
                            next_attempt_at=now,
                            created_at=now,
                        )
                    )
            nudged.append(anchor)
    return nudged
