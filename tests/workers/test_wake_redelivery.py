"""An overdue wake is sent again by putting its outbox rows back to pending; while a send of
it is still queued or under way its time is not up: the run may not have it yet."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar

import pytest
from sqlmodel import Session

from models.db import transaction
from models.store import as_utc
from models.tables import Delivery, Escalation
from tests.support.rows import add_delivery
from tests.workers.test_blocker_orders import new_case, runtime_on
from workers.runtime import Runtime
from workers.wake_acks import redeliver_due
from workflows.stage_results import DeliveryState, Purpose, Via
from workflows.states import State

T = TypeVar("T")


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    with runtime_on("sqlite", tmp_path) as here:
        yield here


def wake_row(runtime: Runtime, case_id: str, state: DeliveryState, target: str) -> int:
    now = datetime.now(UTC)
    return add_delivery(
        runtime.engine, escalation_id=case_id, purpose=Purpose.WAKE_WEBHOOK,
        channel=Via.WEBHOOK, target=target, state=state, attempts=1, next_attempt_at=now,
        lease_until=now + timedelta(minutes=2) if state == DeliveryState.SENDING else None,
    )  # fmt: skip


def overdue_case(runtime: Runtime, now: datetime) -> str:
    """A closed case whose wake's acknowledgement was due a second ago."""
    case_id = new_case(runtime, "Which provider?")
    with transaction(runtime.engine) as session:
        case = session.get(Escalation, case_id)
        assert case is not None
        case.state, case.ack_due_at = State.CLOSED, now - timedelta(seconds=1)
        session.add(case)
    return case_id


def stored(runtime: Runtime, table: type[T], key: object) -> T:
    """One row as the database holds it now."""
    with Session(runtime.engine) as session:
        row = session.get(table, key)
        assert row is not None
        return row


def test_an_overdue_wake_is_sent_again_from_its_first_attempt_a_refused_one_is_not(
    runtime: Runtime,
) -> None:
    # Given a closed case whose wake went out to two webhooks, one refused by the allow-list
    now = datetime.now(UTC)
    case_id = overdue_case(runtime, now)
    sent = wake_row(runtime, case_id, DeliveryState.SENT, "http://127.0.0.1:9/sent")
    refused = wake_row(runtime, case_id, DeliveryState.REFUSED, "http://10.0.0.1/refused")
    # When the acknowledgement is overdue
    assert redeliver_due(runtime, now=now) == [case_id]
    # Then the sent one is queued again from its first attempt, and counted
    again = stored(runtime, Delivery, sent)
    assert (again.state, again.attempts) == (DeliveryState.PENDING, 0)
    assert stored(runtime, Delivery, refused).state == DeliveryState.REFUSED
    assert stored(runtime, Escalation, case_id).wake_redeliveries == 1


@pytest.mark.parametrize("state", [DeliveryState.SENDING, DeliveryState.PENDING])
def test_a_wake_still_being_sent_when_its_time_is_up_is_waited_for_not_sent_again(
    runtime: Runtime, state: DeliveryState
) -> None:
    # Given a closed case whose wake has one webhook sent and one still queued or under way
    # (a loaded worker: the run may not have its wake yet)
    now = datetime.now(UTC)
    case_id = overdue_case(runtime, now)
    sent = wake_row(runtime, case_id, DeliveryState.SENT, "http://127.0.0.1:9/sent")
    busy = wake_row(runtime, case_id, state, "http://127.0.0.1:9/slow")
    # When the acknowledgement's time is up
    assert redeliver_due(runtime, now=now) == []
    # Then nothing is sent again or counted: the deadline moves a wait on from now
    assert stored(runtime, Delivery, sent).state == DeliveryState.SENT
    still = stored(runtime, Delivery, busy)
    assert (still.state, still.attempts) == (state, 1)
    case = stored(runtime, Escalation, case_id)
    assert case.wake_redeliveries == 0
    due = as_utc(case.ack_due_at)
    assert due is not None and due > now
