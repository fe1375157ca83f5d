"""Every page that worked asks whether its channel holds pages to send again: a question
about a few rows, answered from their own index, never by reading the whole outbox."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.engine import Engine
from sqlmodel import Session

from models.db import transaction
from models.tables import Delivery, Escalation
from tests.support.stores import migrated_store
from workers.undelivered import record_sent_page, resend_on_recovery
from workflows.stage_results import DeliveryState, Purpose, Role, Via
from workflows.states import State

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
SENT_ROWS = 3000  # enough that PostgreSQL would rather use an index than read them all
SENT_PAGE = {
    "escalation_id": "c1", "purpose": Purpose.NOTIFY, "channel": Via.APPRISE, "target": "ops",
    "role": Role.PRIMARY, "state": DeliveryState.SENT, "payload": {},
}  # fmt: skip


def an_outbox_of_sent_pages(engine: Engine) -> Delivery:
    """One closed case with SENT_ROWS pages sent on the `ops` tag, and one page being sent
    there now (returned): what a busy outbox looks like when a page's send works."""
    with transaction(engine) as session:
        session.add(
            Escalation(
                id="c1", run_id="r", packet_id="p", severity="low", trigger_type="blocked",
                state=State.CLOSED, packet={}, snapshot={},
            )
        )  # fmt: skip
    with engine.begin() as connection:
        connection.execute(
            Delivery.__table__.insert(),  # type: ignore[attr-defined]
            [{**SENT_PAGE, "step": step} for step in range(SENT_ROWS + 1)],
        )
        connection.execute(text("UPDATE deliveries SET state = 'sending' WHERE step = 0"))
        if engine.dialect.name == "postgresql":
            connection.execute(text("ANALYZE deliveries"))
    with Session(engine) as session:
        sending = session.get(Delivery, 1)
        assert sending is not None and sending.state == DeliveryState.SENDING
        session.expunge(sending)
        return sending


@pytest.fixture
def postgres(tmp_path: Path) -> Iterator[Engine]:
    with migrated_store(tmp_path, "postgresql") as engine:
        yield engine


def outbox_reads(session: Session) -> tuple[int, int]:
    """(whole-table reads, index reads) of the outbox by this connection not yet reported
    to the statistics (this transaction's, and maybe earlier ones'): read it twice."""
    seq, idx = session.execute(
        text(
            "SELECT seq_scan, coalesce(idx_scan, 0) FROM pg_stat_xact_user_tables "
            "WHERE relname = 'deliveries'"
        )
    ).one()
    return int(seq), int(idx)


def test_a_page_that_worked_asks_for_held_pages_without_reading_the_outbox(
    postgres: Engine,
) -> None:
    # Given a busy outbox on PostgreSQL, and the plan psycopg's prepared statements get
    # after five runs (generic: made once, for any values of its parameters)
    sending = an_outbox_of_sent_pages(postgres)
    with transaction(postgres) as session:
        session.execute(text("SET LOCAL plan_cache_mode = force_generic_plan"))
        before = outbox_reads(session)
        # When the page's record is written, asking whether the channel holds pages, and
        # the question is asked again on its own (as resend_on_recovery asks it)
        held = record_sent_page(session, sending, {"state": DeliveryState.SENT, "sent_at": NOW})
        again = resend_on_recovery(session, sending, now=NOW)
        after = outbox_reads(session)
    reads = (after[0] - before[0], after[1] - before[1])
    # Then nothing is held, and the outbox was read by index alone, never whole
    assert (held, again) == (False, [])
    assert reads[0] == 0, f"the outbox was read whole {reads[0]} time(s)"
    assert reads[1] >= 3  # the record's row, the question within it, the probe


def test_held_pages_are_still_found_through_their_index(postgres: Engine) -> None:
    # Given the same outbox on PostgreSQL with one earlier page on `ops` given up on, for
    # a case still awaiting its answer
    sending = an_outbox_of_sent_pages(postgres)
    with postgres.begin() as connection:
        connection.execute(text("UPDATE escalations SET state = 'awaiting'"))
        connection.execute(text("UPDATE deliveries SET state = 'abandoned' WHERE step = 7"))
    with transaction(postgres) as session:
        session.execute(text("SET LOCAL plan_cache_mode = force_generic_plan"))
        before = outbox_reads(session)
        # When a page on that channel works
        held = record_sent_page(session, sending, {"state": DeliveryState.SENT, "sent_at": NOW})
        resent = resend_on_recovery(session, sending, now=NOW, any_held=held)
        after = outbox_reads(session)
    reads = (after[0] - before[0], after[1] - before[1])
    # Then the held page is found and due again, and the outbox was not read whole for it
    assert (held, resent) == (True, ["c1"])
    assert reads[0] == 0, f"the outbox was read whole {reads[0]} time(s)"


@pytest.fixture
def sqlite(tmp_path: Path) -> Iterator[Engine]:
    with migrated_store(tmp_path) as engine:
        yield engine


def test_sqlite_plans_the_held_question_on_its_index(sqlite: Engine) -> None:
    # Given a busy outbox on SQLite (no statistics: its plans come from the indexes alone)
    engine = sqlite
    sending = an_outbox_of_sent_pages(engine)
    asked: list[tuple[str, Any]] = []

    def keep(_conn: Any, _cursor: Any, sql: str, params: Any, *_rest: Any) -> None:
        if "abandoned" in sql:  # the held question, in the record and in the probe
            asked.append((sql, params))

    # When a page's record is written and the question asked again on its own
    event.listen(engine, "before_cursor_execute", keep)
    with transaction(engine) as session:
        record_sent_page(session, sending, {"state": DeliveryState.SENT, "sent_at": NOW})
        resend_on_recovery(session, sending, now=NOW)
    event.remove(engine, "before_cursor_execute", keep)
    # Then each asking is planned on the index of held rows
    assert len(asked) == 2
    with engine.connect() as connection:
        for sql, params in asked:
            rows = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", params)
            plan = " ".join(str(row[-1]) for row in rows)
            assert "ix_deliveries_held" in plan, plan
