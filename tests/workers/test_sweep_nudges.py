"""The sweeper nudges a due outbox row once per stall interval, not on every sweep: with a
backed-up queue each sweep would otherwise add another message for the same row."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session

from models.db import transaction
from models.tables import Delivery
from tests.support.rows import add_delivery
from tests.workers.test_blocker_orders import new_case, runtime_on
from workers import names, tasks
from workers.runtime import Runtime
from workflows.stage_results import DeliveryState


@pytest.fixture(params=["sqlite", "postgres"])
def runtime(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Runtime]:
    with runtime_on(request.param, tmp_path) as here:
        yield here


def outbox_row(runtime: Runtime, state: DeliveryState, due: datetime) -> int:
    case_id = new_case(runtime, "Which provider?")
    return add_delivery(
        runtime.engine, escalation_id=case_id, purpose="notify", channel="apprise",
        target="tag:ops", title="Decision needed", body="Which provider?", state=state,
        attempts=1, next_attempt_at=due,
    )  # fmt: skip


@pytest.mark.parametrize("state", [DeliveryState.FAILED, DeliveryState.PENDING])
def test_a_due_row_is_nudged_once_until_it_looks_lost_again(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch, state: DeliveryState
) -> None:
    nudged: list[str] = []
    monkeypatch.setattr(tasks, "nudge", lambda _app, _stage, case_id: nudged.append(case_id))
    sweep: Any = runtime.app.tasks[names.SWEEP]
    stall = timedelta(seconds=runtime.settings.stall_after)
    # Given a row due for its send, its nudge lost (due a stall interval ago)
    row_id = outbox_row(runtime, state, datetime.now(UTC) - 2 * stall)
    # When the sweeper runs three times before any worker takes the message
    for _ in range(3):
        sweep()
    # Then it was nudged once, and waits as pending (queued to send)
    assert len(nudged) == 1
    with Session(runtime.engine) as session:
        row = session.get(Delivery, row_id)
        assert row is not None and row.state == DeliveryState.PENDING
    # And once that nudge too looks lost, it is nudged again
    with transaction(runtime.engine) as session:
        stale = session.get(Delivery, row_id)
        assert stale is not None
        stale.next_attempt_at = datetime.now(UTC) - 2 * stall
        session.add(stale)
    sweep()
    assert len(nudged) == 2
