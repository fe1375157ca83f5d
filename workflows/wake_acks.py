"""Proof the run resumed: a closed case's wake is acknowledged, or redelivered, then flagged.

No peer has this; users of several report "it says approved but nothing happens". A case
that closed on a decision waits for the run's acknowledgement; while none comes its wake-ups
are sent again with a doubling backoff, and after the last try the case reads as decided,
not resumed, so a person can look. A task's wake (SPEC §8: its last blocker resolved) is one
more wake of the same kind: it has its own wake id, and its acknowledgement stands for every
blocker it carried.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum


class ResumedVia(StrEnum):
    """How the service learned that the run took its decision."""

    ACK = "ack"  # POST /v1/wakes/{id}/ack, the Celery ack task, escalate wait, the client
    BLOCKED_FILE_REMOVED = "blocked_file_removed"  # a shell loop's BLOCKED.md was replaced
    COMMAND_FILE_WRITTEN = "command_file_written"  # a pipeline's orchestrator has its file


@dataclass(frozen=True)
class AckPolicy:
    """How long to wait for an acknowledgement, and how often to send the wake again."""

    first_wait: timedelta
    redeliveries: int


class AckAction(StrEnum):
    """What the sweep does with an unacknowledged wake whose deadline passed."""

    REDELIVER = "redeliver"  # send it again and wait twice as long
    AWAIT_SEND = "await_send"  # a send of it is still under way: the run may not have it yet
    GIVE_UP = "give_up"  # out of tries: the case shows decided, not resumed


@dataclass(frozen=True)
class AckStep:
    action: AckAction
    next_due: datetime | None  # None: stop waiting


TASK_WAKE_PREFIX = "task-"  # a case id is 12 hex characters: the two never collide


def task_wake_id(wait_id: int) -> str:
    """The wake id a task's blocker set is woken with."""
    return f"{TASK_WAKE_PREFIX}{wait_id}"


def task_wait_of(wake_id: str) -> int | None:
    """The task set a wake id names, or None when it names a case."""
    number = wake_id.removeprefix(TASK_WAKE_PREFIX)
    if number == wake_id or not number.isdecimal() or len(number) > 18:
        return None
    return int(number)


def first_ack_due(policy: AckPolicy, *, closed_at: datetime) -> datetime:
    return closed_at + policy.first_wait


def next_ack_step(
    policy: AckPolicy, *, redelivered: int, now: datetime, send_under_way: bool = False
) -> AckStep:
    """Send again while tries remain, each wait twice the one before; then give up. While a
    send of the wake is still under way (queued, retrying, or in flight) its clock has not
    really started: wait the same time again from now, counting nothing."""
    wait = policy.first_wait * 2**redelivered
    if send_under_way:
        return AckStep(AckAction.AWAIT_SEND, next_due=now + wait)
    if redelivered >= policy.redeliveries:
        return AckStep(AckAction.GIVE_UP, next_due=None)
    return AckStep(AckAction.REDELIVER, next_due=now + wait * 2)
