"""The acknowledgement schedule: a doubling wait between redeliveries, then it gives up; a
wake still being sent is not late yet."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from workflows.wake_acks import (
    AckAction,
    AckPolicy,
    AckStep,
    first_ack_due,
    next_ack_step,
    task_wait_of,
    task_wake_id,
)

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
POLICY = AckPolicy(first_wait=timedelta(minutes=5), redeliveries=3)


def test_the_first_acknowledgement_is_due_one_wait_after_the_close() -> None:
    assert first_ack_due(POLICY, closed_at=NOW) == NOW + timedelta(minutes=5)


def test_each_redelivery_waits_twice_as_long_as_the_one_before() -> None:
    waits = [next_ack_step(POLICY, redelivered=n, now=NOW).next_due for n in range(3)]
    assert waits == [NOW + timedelta(minutes=m) for m in (10, 20, 40)]
    steps = [next_ack_step(POLICY, redelivered=n, now=NOW).action for n in range(3)]
    assert steps == [AckAction.REDELIVER] * 3


def test_after_the_last_redelivery_it_stops_waiting() -> None:
    step = next_ack_step(POLICY, redelivered=3, now=NOW)
    assert step.action is AckAction.GIVE_UP and step.next_due is None


def test_no_redeliveries_means_one_wake_then_the_flag() -> None:
    step = next_ack_step(AckPolicy(timedelta(seconds=1), 0), redelivered=0, now=NOW)
    assert step.action is AckAction.GIVE_UP and step.next_due is None


def test_a_wake_still_being_sent_is_not_late_its_wait_starts_again_and_counts_nothing() -> None:
    # the first send, and the second redelivery's, both still queued when their time is up
    first = next_ack_step(POLICY, redelivered=0, now=NOW, send_under_way=True)
    assert first == AckStep(AckAction.AWAIT_SEND, next_due=NOW + timedelta(minutes=5))
    last = next_ack_step(POLICY, redelivered=3, now=NOW, send_under_way=True)
    assert last == AckStep(AckAction.AWAIT_SEND, next_due=NOW + timedelta(minutes=40))


def test_a_task_wake_id_names_its_set_and_never_a_case() -> None:
    assert task_wait_of(task_wake_id(42)) == 42
    assert task_wait_of("3f9c2a1b7d40") is None  # a case id
    assert task_wait_of("task-") is None and task_wait_of("task-x1") is None
    assert task_wait_of("task-" + "9" * 40) is None  # no integer overflow in SQL
