"""Every enum member fits its column on both databases, and reads back as a member."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.exc import StatementError
from sqlmodel import Session

from models.db import make_engine
from models.migrate import upgrade
from models.settings import Settings
from models.tables import Delivery, Escalation, Reply
from tests.support.services import fresh_postgres_database
from workflows.judgement import ReplyOutcome
from workflows.stage_results import DeliveryState, Resolution, Role, Via
from workflows.states import State

NOW = datetime(2026, 12, 1, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgres"])
def session(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Session]:
    def open_on(settings: Settings) -> Iterator[Session]:
        upgrade(settings)
        engine = make_engine(settings)
        with Session(engine) as session:
            yield session
        engine.dispose()

    if request.param == "sqlite":
        yield from open_on(Settings(home=tmp_path))
        return
    with fresh_postgres_database() as url:
        yield from open_on(Settings(home=tmp_path, database_url=url))


def case(session: Session, state: State, outcome: Resolution | None) -> Escalation:
    row = Escalation(
        id=f"e-{state}-{outcome}",
        run_id="r",
        packet_id=f"p-{state}-{outcome}",
        severity="low",
        trigger_type="harm_risk",
        state=state,
        outcome=outcome,
    )
    session.add(row)
    session.commit()
    return row


def test_every_case_state_and_outcome_is_stored_and_read_as_a_member(session: Session) -> None:
    for state in State:
        for outcome in [None, *Resolution]:
            row = case(session, state, outcome)
            session.expire(row)
            assert row.state is state and row.outcome is outcome


def test_every_reply_outcome_fits(session: Session) -> None:
    anchor = case(session, State.AWAITING, None)
    for outcome in ReplyOutcome:
        session.add(
            Reply(
                escalation_id=anchor.id,
                at=NOW,
                channel="api",
                sender="a",
                raw_text="x",
                outcome=outcome,
            )
        )
    session.commit()  # needs_confirmation is 18 long: the column was 16 before 0008


def test_every_delivery_state_role_and_channel_fits(session: Session) -> None:
    anchor = case(session, State.AWAITING, None)
    for n, (state, role, via) in enumerate(
        zip(DeliveryState, [*Role] * 3, [*Via] * 2, strict=False)
    ):
        session.add(
            Delivery(
                escalation_id=anchor.id,
                purpose="notify",
                channel=via,
                target=f"t{n}",
                role=role,
                state=state,
            )
        )
    session.commit()


def test_a_value_outside_the_enum_is_refused_not_stored(session: Session) -> None:
    session.add(
        Escalation(
            id="bad",
            run_id="r",
            packet_id="p",
            severity="low",
            trigger_type="harm_risk",
            state="sleeping",
        )  # type: ignore[arg-type]
    )
    with pytest.raises(StatementError):
        session.commit()
