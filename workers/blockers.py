"""Linking blockers to a run's task and waking it once, when the last one is resolved."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlmodel import Session, col, select, update

from models.db import transaction
from models.store import decision_json, decision_of
from models.tables import Delivery, Escalation, TaskWait
from workers.outbound import refusal_of
from workers.runtime import Runtime
from workflows.blockers import Blocker, blocker_set_key, ready_to_wake, wake_payload
from workflows.errors import NotFound, PermanentError
from workflows.intake import check_wake, wake_queue
from workflows.stage_results import Via

TASK_WAKE_KEYS = ("task", "queue", "webhook")


def _blockers(session: Session, escalation_ids: Sequence[str]) -> list[Blocker]:
    found = []
    for escalation_id in escalation_ids:
        row = session.get(Escalation, escalation_id)
        if row is None:
            continue
        decision = decision_of(session, row.id)
        found.append(
            Blocker(
                escalation_id=row.id,
                question=str((row.packet or {}).get("requested_action") or row.packet_id),
                state=row.state,
                decision=decision_json(decision) if decision else None,
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


def link(runtime: Runtime, task: str, escalation_ids: Any, wake: Any) -> dict[str, Any]:
    """Make these escalations the task's blockers (idempotent for the same set)."""
    if (
        not isinstance(escalation_ids, list)
        or not escalation_ids
        or not all(isinstance(i, str) and i for i in escalation_ids)
    ):
        raise PermanentError("escalations: must be a non-empty list of escalation ids")
    checked_wake = _check_wake(wake, runtime.settings.queue)
    if "webhook" in checked_wake and (why := refusal_of(checked_wake["webhook"], runtime.outbound)):
        raise PermanentError(f"wake.webhook: {why}")
    ids = sorted(set(escalation_ids))
    with transaction(runtime.engine) as session:
        missing = [i for i in ids if session.get(Escalation, i) is None]
        if missing:
            raise NotFound(f"no escalation {', '.join(missing)}")
        key = blocker_set_key(ids)
        existing = session.exec(
            select(TaskWait).where(TaskWait.task == task, TaskWait.set_key == key)
        ).first()
        if existing is None:
            session.add(
                TaskWait(
                    task=task,
                    set_key=key,
                    escalation_ids=ids,
                    wake=checked_wake,
                    created_at=datetime.now(UTC),
                )
            )
        cards = [blocker.card() for blocker in _blockers(session, ids)]
    return {"task": task, "blockers": cards, "created": existing is None}


def cards(runtime: Runtime, task: str) -> dict[str, Any]:
    """The task's waits, each with its 'Decision needed' cards."""
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
                }
                for wait in waits
            ],
        }


def release_ready(runtime: Runtime) -> list[str]:
    """Wake every task whose last blocker is resolved, once per set; returns the escalation
    ids whose outbox gained a wake-up (their delivery is nudged by the caller)."""
    now = datetime.now(UTC)
    nudged: list[str] = []
    with transaction(runtime.engine) as session:
        for wait in session.exec(select(TaskWait).where(col(TaskWait.woken_at).is_(None))).all():
            blockers = _blockers(session, wait.escalation_ids)
            if len(blockers) != len(wait.escalation_ids) or not ready_to_wake(blockers):
                continue
            # The conditional update is the "exactly once": a second sweep, beat or worker
            # finds woken_at already set and changes nothing.
            claimed = session.execute(
                update(TaskWait)
                .where(col(TaskWait.id) == wait.id, col(TaskWait.woken_at).is_(None))
                .values(woken_at=now)
            )
            if claimed.rowcount != 1:  # type: ignore[attr-defined]
                continue
            payload = wake_payload(wait.task, blockers)
            anchor = blockers[-1].escalation_id  # the outbox row hangs on one of the cases
            for channel, target, queue in (
                (Via.CELERY, wait.wake.get("task"), wake_queue(wait.wake)),
                (Via.WEBHOOK, wait.wake.get("webhook"), None),
            ):
                if target:
                    session.add(
                        Delivery(
                            escalation_id=anchor,
                            purpose=f"task_wake:{wait.id}",
                            channel=channel,
                            target=target,
                            queue=queue,
                            payload=payload,
                            next_attempt_at=now,
                            created_at=now,
                        )
                    )
            nudged.append(anchor)
    return nudged
