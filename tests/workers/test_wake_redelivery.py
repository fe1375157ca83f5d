"""An overdue wake is sent again by putting its outbox rows back to pending; a send of it
still under way is left to finish, so its record counts its own attempts."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlmodel import Session

from models.db import transaction
from models.tables import Delivery, Escalation
from tests.support.rows import add_delivery
from tests.workers.test_blocker_orders import new_case, runtime_on
from workers.runtime import Runtime
from workers.wake_acks import redeliver_due
from workflows.stage_results import DeliveryState, Purpose, Via
from workflows.states import State


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


def test_an_overdue_wake_is_sent_again_but_a_send_under_way_is_left_alone(
    runtime: Runtime,
) -> None:
    # Given a closed case whose wake went out but was never acknowledged, one webhook sent
    # and one still being sent
    now = datetime.now(UTC)
    case_id = new_case(runtime, "Which provider?")
    with transaction(runtime.engine) as session:
        case = session.get(Escalation, case_id)
        assert case is not None
        case.state, case.ack_due_at = State.CLOSED, now - timedelta(seconds=1)
        session.add(case)
    sent = wake_row(runtime, case_id, DeliveryState.SENT, "http://127.0.0.1:9/sent")
    sending = wake_row(runtime, case_id, DeliveryState.SENDING, "http://127.0.0.1:9/slow")
    # When the acknowledgement is overdue
    assert redeliver_due(runtime, now=now) == [case_id]
    # Then the sent one is queued again from its first attempt; the one under way is not
    with Session(runtime.engine) as session:
        again, busy = session.get(Delivery, sent), session.get(Delivery, sending)
        assert again is not None and busy is not None
        assert (again.state, again.attempts) == (DeliveryState.PENDING, 0)
        assert (busy.state, busy.attempts) == (DeliveryState.SENDING, 1)
