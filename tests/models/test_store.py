"""The store's Core writes hold what the ORM would have written."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from models.db import transaction
from models.store import lock_escalation, write_case
from models.tables import Escalation
from tests.support.stores import migrated_store
from workflows.states import State


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    with migrated_store(tmp_path, request.param) as made:
        yield made


def test_write_case_writes_what_changed_and_leaves_the_rest(engine: Engine) -> None:
    # Given a stored case
    packet = {"run_id": "r", "blocked_on": "x"}
    with transaction(engine) as session:
        session.add(
            Escalation(
                id="c1", run_id="r", packet_id="p", severity="low", trigger_type="blocked",
                state=State.RECEIVED, packet=packet, snapshot={"a": 1}, attempts=3,
            )
        )  # fmt: skip
    # When a stage changes some columns (a JSON one, one set to None) and writes the row
    later = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
    with transaction(engine) as session:
        row = lock_escalation(session, "c1")
        assert row is not None
        row.state, row.snapshot, row.attempts = State.SNAPSHOTTED, {"b": 2}, 0
        row.next_action_at, row.packet = later, None
        write_case(session, row)
        assert row not in session  # the commit's flush has nothing of it to write
    # Then those columns hold the new values, and the others their old ones
    with Session(engine) as session:
        stored = session.get(Escalation, "c1")
        assert stored is not None
        assert (stored.state, stored.snapshot, stored.attempts) == ("snapshotted", {"b": 2}, 0)
        assert stored.packet is None
        assert (
            stored.next_action_at is not None and stored.next_action_at.replace(tzinfo=UTC) == later
        )
        assert (stored.run_id, stored.severity) == ("r", "low")
