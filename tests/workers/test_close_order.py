"""The close stops a decided case's waiting pages before it writes the close and claims its
notices: in the timeline first, and never claimed as well (the claim takes waiting rows)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, col, select

from models.db import transaction
from models.migrate import upgrade
from models.settings import Settings
from models.tables import Decision, Delivery, Escalation, Event
from tests.support.services import fresh_postgres_database
from workers import names, tasks  # noqa: F401  (registers the stages)
from workers.app import make_celery
from workers.intake import accept
from workers.runtime import runtime_for
from workflows.examples import valid_packet
from workflows.stage_results import DeliveryState, Purpose, Via
from workflows.states import State

REPO = Path(__file__).resolve().parents[2]


def page(
    case_id: str, purpose: Purpose, tag: str, state: DeliveryState, due: datetime, **more: Any
) -> Delivery:
    return Delivery(
        escalation_id=case_id,
        purpose=purpose,
        channel=Via.APPRISE,
        target=tag,
        state=state,
        next_attempt_at=due,
        payload={"tag": tag},
        created_at=due,
        **more,
    )


def _decided_case_with_waiting_pages(tmp_path: Path, url: str | None) -> tuple[Any, Any, str]:
    apprise = tmp_path / "apprise.yaml"
    apprise.write_text("urls:\n  - json://127.0.0.1:9/x:\n      tag: ops, ops-log, oncall, pager\n")
    settings = Settings(
        home=tmp_path / "home",
        design=REPO / "examples" / "design-fast.yaml",
        apprise_config=apprise,
        delivery_tries=1,
        delivery_backoff=0.01,
        send_timeout=1.0,
        outbound_allow="127.0.0.1/32",
        database_url=url,
    )
    upgrade(settings)
    app = make_celery(settings)
    runtime = runtime_for(app)
    case_id = accept(runtime, {"packet": valid_packet()}).id
    now = datetime.now(UTC)
    with transaction(runtime.engine) as session:
        row = session.get(Escalation, case_id)
        assert row is not None
        row.state, row.decided_at = State.DECIDED, now
        session.add(row)
        session.add(
            Decision(
                escalation_id=case_id,
                option="approve",
                value="approve",
                resumes=True,
                decided_by="ana",
                channel="t",
                at=now,
            )
        )
        # the first page, sent: the close notifies its channel; two chain levels still waiting,
        # one due in an hour and one already due but not yet claimed
        session.add(
            page(case_id, Purpose.NOTIFY, "ops", DeliveryState.SENT, now, sent_at=now, attempts=1)
        )
        for step, due in ((1, now + timedelta(hours=1)), (2, now - timedelta(seconds=1))):
            session.add(
                page(case_id, Purpose.CHAIN, "oncall", DeliveryState.WAITING, due, step=step)
            )
    return app, runtime, case_id


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest) -> Iterator[str | None]:
    if request.param == "sqlite":
        yield None
        return
    with fresh_postgres_database() as made:
        yield made


def _closed(tmp_path: Path, url: str | None) -> tuple[list[str], list[tuple[str, int]]]:
    app, runtime, case_id = _decided_case_with_waiting_pages(tmp_path, url)
    app.tasks[names.CLOSE].run(case_id)
    with Session(runtime.engine) as session:
        events = session.exec(
            select(Event).where(Event.escalation_id == case_id).order_by(col(Event.id))
        ).all()
        pages = session.exec(
            select(Delivery).where(Delivery.purpose == "chain").order_by(col(Delivery.step))
        ).all()
    runtime.engine.dispose()
    return [e.kind for e in events], [(p.state, p.attempts) for p in pages]


def test_close_records_pages_stopped_before_it_closes_the_case(
    tmp_path: Path, url: str | None
) -> None:
    kinds, _ = _closed(tmp_path, url)
    assert kinds.index("pages_stopped") < kinds.index("closed"), kinds


def test_a_due_waiting_page_stopped_by_the_close_is_not_also_claimed(
    tmp_path: Path, url: str | None
) -> None:
    kinds, pages = _closed(tmp_path, url)
    assert pages == [("cancelled", 0), ("cancelled", 0)]
    assert "delivery_cancelled" not in kinds, kinds
