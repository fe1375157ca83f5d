"""A page that worked is recorded with its event in one statement that commits by itself
(PostgreSQL); a channel holding pages to send again is left to the full transaction."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, select, text
from sqlalchemy.engine import Engine
from sqlmodel import Session
from sqlmodel import select as sqlmodel_select

from models.db import transaction
from models.tables import EVENTS, Delivery, Escalation
from tests.support.stores import migrated_store
from workers.undelivered import NOT_RECORDED, record_page_alone
from workflows.stage_results import DeliveryState, Purpose, Role, Via
from workflows.states import State

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
WORKED = {"state": DeliveryState.SENT, "last_error": None, "lease_until": None, "sent_at": NOW}
DETAIL = {"delivery": 1, "outcome": "sent"}


def a_page_being_sent(engine: Engine, *, held_on_channel: bool = False) -> Delivery:
    """Case c1 awaiting, its page to `ops` being sent (returned); with `held_on_channel`,
    another open case's page to `ops` left unknown, waiting for the channel to work."""
    with transaction(engine) as session:
        for case_id in ("c1", "c2"):
            session.add(
                Escalation(
                    id=case_id, run_id="r", packet_id=case_id, severity="low",
                    trigger_type="blocked", state=State.AWAITING, packet={}, snapshot={},
                )
            )  # fmt: skip
    with transaction(engine) as session:
        page: dict[str, Any] = {
            "purpose": Purpose.NOTIFY, "channel": Via.APPRISE, "target": "ops",
            "role": Role.PRIMARY, "payload": {}, "created_at": NOW, "attempts": 1,
        }  # fmt: skip
        session.add(Delivery(escalation_id="c1", state=DeliveryState.SENDING, **page))
        if held_on_channel:
            session.add(Delivery(escalation_id="c2", state=DeliveryState.UNKNOWN, **page))
    with Session(engine) as session:
        sending = session.exec(
            sqlmodel_select(Delivery).where(Delivery.escalation_id == "c1")
        ).one()
        session.expunge(sending)
        return sending


def stored(engine: Engine, delivery_id: int | None) -> tuple[str, list[str]]:
    """The page's state and the kinds of c1's events."""
    with engine.connect() as connection:
        state = connection.execute(
            text("SELECT state FROM deliveries WHERE id = :id"), {"id": delivery_id}
        ).scalar_one()
        kinds = connection.execute(
            select(EVENTS.c.kind).where(EVENTS.c.escalation_id == "c1")
        ).scalars()
        return str(state), list(kinds)


@pytest.fixture
def postgres(tmp_path: Path) -> Iterator[Engine]:
    with migrated_store(tmp_path, "postgresql") as engine:
        yield engine


def test_a_page_that_worked_is_recorded_in_one_round_trip(postgres: Engine) -> None:
    sending = a_page_being_sent(postgres)
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    event.listen(postgres, "before_cursor_execute", seen)
    try:
        state = record_page_alone(postgres, sending, WORKED, DETAIL, durable=False, now=NOW)
    finally:
        event.remove(postgres, "before_cursor_execute", seen)

    assert state is State.AWAITING  # the state its event was stamped with
    assert len(statements) == 1 and not statements[0].lstrip().upper().startswith("BEGIN")
    assert stored(postgres, sending.id) == ("sent", ["delivery_attempt"])
    with postgres.connect() as connection:
        # psycopg sends no BEGIN of its own either: the connection commits each statement
        assert connection.connection.driver_connection.autocommit  # type: ignore[union-attr]
        # its own commit's setting did not outlive it
        assert connection.execute(text("SHOW synchronous_commit")).scalar_one() == "on"
        page = connection.execute(
            text("SELECT sent_at, last_error, lease_until FROM deliveries WHERE id = :id"),
            {"id": sending.id},
        ).one()
        stamped = connection.execute(
            select(EVENTS.c.at, EVENTS.c.state, EVENTS.c.detail).where(
                EVENTS.c.escalation_id == "c1"
            )
        ).one()
    assert tuple(page) == (NOW, None, None)
    assert tuple(stamped) == (NOW, State.AWAITING, DETAIL)


def test_a_channel_holding_pages_is_left_to_the_full_transaction(postgres: Engine) -> None:
    sending = a_page_being_sent(postgres, held_on_channel=True)

    state = record_page_alone(postgres, sending, WORKED, DETAIL, durable=True, now=NOW)

    assert state is NOT_RECORDED
    assert stored(postgres, sending.id) == ("sending", [])  # nothing written


def test_other_records_and_sqlite_are_left_to_the_full_transaction(
    postgres: Engine, tmp_path: Path
) -> None:
    sending = a_page_being_sent(postgres)
    with_refs = {**WORKED, "platform_refs": [{"ts": "1"}]}
    assert record_page_alone(postgres, sending, with_refs, DETAIL, durable=True, now=NOW) is (
        NOT_RECORDED
    )
    with migrated_store(tmp_path / "lite", "sqlite") as sqlite:
        on_sqlite = a_page_being_sent(sqlite)
        assert record_page_alone(sqlite, on_sqlite, WORKED, DETAIL, durable=True, now=NOW) is (
            NOT_RECORDED
        )
        assert stored(sqlite, on_sqlite.id) == ("sending", [])
