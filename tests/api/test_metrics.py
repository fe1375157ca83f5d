"""/metrics and the insights figures, worked out by the database: right on SQLite and
PostgreSQL, over a bounded window of decisions, and never by loading whole tables."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import Session

from api.metrics import _latest, covered, exposition, figures
from models.db import transaction
from models.tables import Decision, Delivery, Escalation, Reply
from tests.support.stores import migrated_store
from workflows.judgement import ReplyOutcome
from workflows.stage_results import DeliveryState, Via
from workflows.states import State

T0 = datetime(2026, 12, 1, 7, 0, tzinfo=UTC)
S = timedelta(seconds=1)


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    with migrated_store(tmp_path, request.param) as made:
        yield made


def case(
    session: Session, case_id: str, *, state: State = State.CLOSED, severity: str = "high",
    run: str = "run-1", trigger: str = "blocked", **when: Any,
) -> None:  # fmt: skip
    session.add(
        Escalation(
            id=case_id, run_id=run, packet_id=case_id, severity=severity, trigger_type=trigger,
            state=state, packet={"secret": "not to be read"}, **when,
        )
    )  # fmt: skip
    session.flush()


def decision(
    session: Session, case_id: str, at: datetime, *, channel: str = "slack",
    option: str = "approve", default: bool = False,
) -> None:  # fmt: skip
    session.add(
        Decision(
            escalation_id=case_id, option=option, value=option, resumes=True, decided_by="ana",
            channel=channel, is_default=default, at=at,
        )
    )  # fmt: skip


def reply(session: Session, case_id: str, outcome: ReplyOutcome) -> None:
    session.add(
        Reply(escalation_id=case_id, at=T0, channel="slack", sender="ana", raw_text="ok",
              outcome=outcome)
    )  # fmt: skip


def seed_known_cases(engine: Engine) -> None:
    """Six cases with timestamps picked to land on bucket edges."""
    with transaction(engine) as db:
        # a person decided after exactly 120 s; its run acknowledged the wake
        routed = T0 + 10 * S
        case(db, "c1", created_at=T0, routed_at=routed, decided_at=routed + 120 * S,
             closed_at=routed + 123 * S, resumed_at=routed + 124 * S)  # fmt: skip
        decision(db, "c1", routed + 120 * S)
        # the timeout default applied after 4,000 s; the run never acknowledged
        routed = T0 + 30 * S
        case(db, "c2", created_at=T0, routed_at=routed, decided_at=routed + 4000 * S,
             closed_at=routed + 4001 * S)  # fmt: skip
        decision(db, "c2", routed + 4000 * S, channel="timeout", default=True)
        # a person answered by email after exactly 60 s (the 60 s bucket holds it);
        # the close stamp is earlier than the decision's: counted as 0 s
        routed = T0 + 2 * S
        case(db, "c3", severity="low", created_at=T0, routed_at=routed,
             decided_at=routed + 60 * S, closed_at=routed + 58 * S, resumed_at=T0)  # fmt: skip
        decision(db, "c3", routed + 60 * S, channel="email")
        # open: one awaiting an hour, one just received; one parked (terminal, not open)
        now = datetime.now(UTC)
        case(db, "c4", state=State.AWAITING, severity="medium",
             created_at=now - 3600 * S, routed_at=now - 3595 * S)  # fmt: skip
        case(db, "c5", state=State.RECEIVED, severity="low", created_at=now)
        case(db, "c6", state=State.DEAD_LETTER, created_at=T0 - 100_000 * S)
        for target, state in (("ops", DeliveryState.SENT), ("ops-log", DeliveryState.SENT),
                              ("infra", DeliveryState.FAILED)):  # fmt: skip
            db.add(Delivery(escalation_id="c1", purpose="notify", channel=Via.APPRISE,
                            target=target, state=state))  # fmt: skip
        reply(db, "c1", ReplyOutcome.AMBIGUOUS)
        reply(db, "c1", ReplyOutcome.DECIDED)


def scraped(engine: Engine) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = exposition(engine).decode()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def sample(name: str, **labels: str) -> tuple[str, frozenset[tuple[str, str]]]:
    return name, frozenset(labels.items())


def test_a_scrape_counts_buckets_sums_and_ratios_the_database_worked_out(engine: Engine) -> None:
    # Given cases with known timestamps, defaults, open and parked ones
    seed_known_cases(engine)
    # When Prometheus scrapes
    got = scraped(engine)
    # Then open cases count by state and severity, the parked one left out
    assert got[sample("escalate_open_cases", state="awaiting", severity="medium")] == 1
    assert got[sample("escalate_open_cases", state="received", severity="low")] == 1
    open_states = {dict(labels)["state"] for name, labels in got if name == "escalate_open_cases"}
    assert open_states == {"awaiting", "received"}
    assert 3600 <= got[sample("escalate_oldest_open_age_seconds")] < 3660
    # And only c2's run never acknowledged its wake; deliveries count by outcome
    assert got[sample("escalate_decided_not_resumed")] == 1
    assert got[sample("escalate_deliveries", state="sent")] == 2
    assert got[sample("escalate_deliveries", state="failed")] == 1
    # And the route stage took 10, 30, 2 and 5 s
    route = "escalate_stage_latency_seconds"
    assert got[sample(f"{route}_count", stage="route")] == 4
    assert got[sample(f"{route}_sum", stage="route")] == pytest.approx(47)
    assert got[sample(f"{route}_bucket", stage="route", le="1.0")] == 0
    assert got[sample(f"{route}_bucket", stage="route", le="5.0")] == 2
    assert got[sample(f"{route}_bucket", stage="route", le="15.0")] == 3
    assert got[sample(f"{route}_bucket", stage="route", le="60.0")] == 4
    assert got[sample(f"{route}_bucket", stage="route", le="+Inf")] == 4
    # And deciding took 120, 4,000 and 60 s; closing 3, 1 and (earlier than decided) 0 s
    assert got[sample(f"{route}_sum", stage="decide")] == pytest.approx(4180)
    assert got[sample(f"{route}_bucket", stage="decide", le="60.0")] == 1
    assert got[sample(f"{route}_bucket", stage="decide", le="300.0")] == 2
    assert got[sample(f"{route}_bucket", stage="decide", le="3600.0")] == 2
    assert got[sample(f"{route}_bucket", stage="decide", le="14400.0")] == 3
    assert got[sample(f"{route}_sum", stage="close")] == pytest.approx(4)
    assert got[sample(f"{route}_bucket", stage="close", le="1.0")] == 2
    # And a person's time to decision per tier and channel leaves the default out
    took = "escalate_time_to_decision_seconds"
    assert got[sample(f"{took}_count", tier="high", channel="slack")] == 1
    assert got[sample(f"{took}_sum", tier="high", channel="slack")] == pytest.approx(120)
    assert got[sample(f"{took}_bucket", tier="high", channel="slack", le="60.0")] == 0
    assert got[sample(f"{took}_bucket", tier="high", channel="slack", le="300.0")] == 1
    assert got[sample(f"{took}_bucket", tier="low", channel="email", le="60.0")] == 1
    assert sample(f"{took}_count", tier="high", channel="timeout") not in got
    # And the default applied to one of high's two decisions, none of low's
    assert got[sample("escalate_default_applied_ratio", tier="high")] == 0.5
    assert got[sample("escalate_default_applied_ratio", tier="low")] == 0.0


def test_the_insights_read_only_the_latest_decisions(engine: Engine) -> None:
    # Given six decided cases a minute apart; the two oldest on a trigger of their own,
    # answered alike five times over would make it a candidate, with unclear replies
    with transaction(engine) as db:
        for i in range(6):
            old = i < 2
            case(db, f"d{i}", severity="high", run=f"run-{i}",
                 trigger="old_trigger" if old else "blocked", routed_at=T0)  # fmt: skip
            decision(db, f"d{i}", T0 + timedelta(minutes=i + 1))
            reply(db, f"d{i}", ReplyOutcome.AMBIGUOUS if old else ReplyOutcome.DECIDED)
    # When the insights read a window of four
    with Session(engine) as db:
        found = figures(db, window=4)
    # Then only the newest four count: their times, their replies, their start
    assert found.decided == 4
    assert found.by_tier["high"].p50 == 4 * 60 and found.by_tier["high"].count == 4
    assert found.clarification_rate == 0.0  # the old cases' unclear replies are out
    assert found.since == T0 + timedelta(minutes=3)
    assert "old_trigger" not in {trigger for _run, trigger in found.repeats}
    # And the page says it left the older ones out
    assert covered(found, window=4) == ("The latest 4 decisions, since 2026-12-01 07:03 UTC.")
    assert covered(found, window=5_000) == "Every decision so far: 4, since 2026-12-01 07:03 UTC."


def test_decisions_made_at_one_moment_are_read_alike_by_the_figures_and_the_replies(
    engine: Engine,
) -> None:
    # Given six defaults applied by one sweep (one moment), each case with one reply; the
    # first three's replies unclear
    with transaction(engine) as db:
        for i in range(6):
            case(db, f"t{i}", severity="low", run=f"run-{i}", trigger="blocked", routed_at=T0)
            decision(db, f"t{i}", T0 + timedelta(minutes=5))
            reply(db, f"t{i}", ReplyOutcome.AMBIGUOUS if i < 3 else ReplyOutcome.DECIDED)
    # When the insights read a window of three, the window's edge inside that moment
    with Session(engine) as db:
        found = figures(db, window=3)
        window = list(db.exec(_latest(3)))
    # Then the window is the three written last, for the figures and the replies alike
    assert window == ["t5", "t4", "t3"]
    assert found.decided == 3
    assert found.clarification_rate == 0.0


LOADED_COLUMNS = re.compile(r"escalations\.(packet|snapshot|design|options|wake|problems)\b")
BOUND_STATE = re.compile(r"escalations\.state (?:= |(?:NOT )?IN \()(?!')")  # a placeholder


def test_a_scrape_and_the_insights_load_no_whole_rows(engine: Engine) -> None:
    # Given decided, open and parked cases
    seed_known_cases(engine)
    loaded: list[object] = []
    statements: list[tuple[str, Any]] = []

    def count_load(target: object, _context: object) -> None:
        loaded.append(target)

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        statements.append((statement, parameters))

    for table in (Escalation, Decision, Reply, Delivery):
        event.listen(table, "load", count_load)
    event.listen(engine, "before_cursor_execute", record)
    try:
        # When Prometheus scrapes and an operator opens the insights page
        exposition(engine)
        with Session(engine) as db:
            figures(db)
    finally:
        event.remove(engine, "before_cursor_execute", record)
        for table in (Escalation, Decision, Reply, Delivery):
            event.remove(table, "load", count_load)
    # Then no ORM row was built and no statement read a case's packet or design
    assert loaded == []
    assert [sql for sql, _ in statements if LOADED_COLUMNS.search(sql)] == []
    # And the states are constants in the SQL (so PostgreSQL's plans can use an index)
    assert any("IN ('closed')" in sql for sql, _ in statements)
    assert [sql for sql, _ in statements if BOUND_STATE.search(sql)] == []
