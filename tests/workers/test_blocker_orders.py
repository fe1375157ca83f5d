"""Every order of add, resolve and re-add, against the database: one wake per set, at its last.

The service's own steps (link, the sweep's release) run on a real SQLite or PostgreSQL against
case rows, and what they woke is compared with the rule written as a few lines of model:
a task has one open set; adding extends it (a blocker that already woke the task is not
added again); the sweep wakes a set whose every blocker is resolved, once, and closes it.
"""

from __future__ import annotations

import itertools
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlmodel import Session, col, select

from models.db import make_engine, transaction
from models.migrate import upgrade
from models.settings import Settings
from models.tables import Delivery, Escalation, Event, TaskWait
from tests.support.services import fresh_postgres_database
from tests.support.waiting import wait_until
from tests.workers.conftest import DESIGN
from workers import blockers
from workers.app import make_celery
from workers.runtime import Runtime, runtime_for
from workflows.stage_results import Resolution
from workflows.states import State

WAKE = {"task": "agent.wake", "queue": "agent"}
Op = tuple[str, str]  # ("add" | "resolve", blocker)
OPS: tuple[Op, ...] = (
    ("add", "e1"),
    ("add", "e2"),
    ("resolve", "e1"),
    ("resolve", "e2"),
    ("re-add", "e1"),
    ("re-add", "e2"),
)


def orders() -> list[tuple[Op, ...]]:
    """Every order of the six steps in which a blocker is re-added only after it was added."""
    return [
        order
        for order in itertools.permutations(OPS)
        if all(order.index(("add", b)) < order.index(("re-add", b)) for b in ("e1", "e2"))
    ]


def expected_wakes(order: tuple[Op, ...], *, sweep_each: bool) -> list[list[str]]:
    """The rule, as a model: what the task must be woken with, set by set."""
    open_set: list[str] = []
    woken: set[str] = set()
    resolved: set[str] = set()
    wakes: list[list[str]] = []

    def sweep() -> None:
        nonlocal open_set
        if open_set and all(b in resolved for b in open_set):
            wakes.append(open_set)
            woken.update(open_set)
            open_set = []

    for kind, blocker in order:
        if kind == "resolve":
            resolved.add(blocker)
        elif blocker not in woken and blocker not in open_set:
            open_set = [*open_set, blocker]
        if sweep_each:
            sweep()
    sweep()
    return wakes


@contextmanager
def runtime_on(kind: str, home: Path) -> Iterator[Runtime]:
    """A runtime on a fresh, migrated SQLite or PostgreSQL database (no worker, no broker)."""
    if kind == "sqlite":
        settings = Settings(home=home, design=DESIGN)
        upgrade(settings)
        yield runtime_for(make_celery(settings))
        return
    with fresh_postgres_database() as url:
        settings = Settings(home=home, design=DESIGN, database_url=url)
        engine = make_engine(settings)
        with engine.connect() as connection:  # durability is not under test here: speed
            name = connection.execute(text("SELECT current_database()")).scalar_one()
            connection.execute(text(f'ALTER DATABASE "{name}" SET synchronous_commit = off'))
            connection.commit()
        engine.dispose()
        upgrade(settings)
        here = runtime_for(make_celery(settings))
        yield here
        here.engine.dispose()


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def runtime(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Runtime]:
    with runtime_on(request.param, tmp_path_factory.mktemp("blockers")) as here:
        yield here


@pytest.fixture(scope="module")
def postgres_runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    """Where link and the sweep interleave: SQLite serialises writers (BEGIN IMMEDIATE)."""
    with runtime_on("postgres", tmp_path_factory.mktemp("races")) as here:
        yield here


def new_case(runtime: Runtime, question: str) -> str:
    """A case waiting for its answer, as the workflow leaves it."""
    now = datetime.now(UTC)
    case_id = secrets.token_hex(6)
    with transaction(runtime.engine) as session:
        session.add(
            Escalation(
                id=case_id,
                run_id="run-blockers",
                packet_id=f"esc-{case_id}",
                severity="medium",
                trigger_type="blocked",
                state=State.AWAITING,
                packet={"requested_action": question},
                created_at=now,
                updated_at=now,
            )
        )
    return case_id


def resolve(runtime: Runtime, case_id: str, option: str = "approve") -> None:
    """The case closes with its close record, as the close stage writes it."""
    now = datetime.now(UTC)
    close = {"option": option, "decided_by": "ana", "outcome": "decided", "resumes": True}
    with transaction(runtime.engine) as session:
        row = session.get(Escalation, case_id)
        assert row is not None
        row.state, row.outcome, row.closed_at = State.CLOSED, Resolution.DECIDED, now
        session.add(row)
        session.add(
            Event(escalation_id=case_id, at=now, kind="closed", state="closed", detail=close)
        )


def woken_with(runtime: Runtime, task: str) -> list[dict[str, Any]]:
    """The wake payloads the outbox holds for the task, oldest set first."""
    with Session(runtime.engine) as session:
        waits = session.exec(select(TaskWait.id).where(TaskWait.task == task)).all()
        purposes = [f"task_wake:{wait_id}" for wait_id in waits]
        rows = session.exec(
            select(Delivery).where(col(Delivery.purpose).in_(purposes)).order_by(col(Delivery.id))
        ).all()
        return [row.payload for row in rows]


@pytest.mark.timeout(300)  # dozens of orders, each a whole flow: minutes on a loaded machine
def test_every_order_of_add_resolve_and_re_add_wakes_each_set_once_at_its_last(
    runtime: Runtime,
) -> None:
    # The sweep runs after each step (as between requests), or only once all are done. Which
    # wakes an order makes is the rule's, not the database's: SQLite runs every order in
    # both shapes; PostgreSQL, whose locking and SQL are what it adds, every third order
    # (60 of 180, the seconds a full run costs there taken off the suite).
    sqlite = runtime.settings.resolved_database_url.startswith("sqlite")
    shapes, chosen = ((True, False), orders()) if sqlite else ((True,), orders()[::3])
    for sweep_each, order in itertools.product(shapes, chosen):
        # Given a task and two cases that may block it
        task = f"T-{secrets.token_hex(4)}"
        ids = {b: new_case(runtime, f"Question {b}?") for b in ("e1", "e2")}
        # When the steps happen in this order
        for kind, blocker in order:
            if kind == "resolve":
                resolve(runtime, ids[blocker])
            else:
                blockers.link(runtime, task, [ids[blocker]], WAKE)
            if sweep_each:
                blockers.release_ready(runtime)
        blockers.release_ready(runtime)
        blockers.release_ready(runtime)  # a second sweep (or beat) wakes nothing more
        # Then the task was woken once per set, at its last blocker, with every title
        names = {case_id: blocker for blocker, case_id in ids.items()}
        wakes = woken_with(runtime, task)
        got = [[names[i] for i in wake["resolved_blocker_ids"]] for wake in wakes]
        assert got == expected_wakes(order, sweep_each=sweep_each), (order, sweep_each)
        for wake in wakes:
            assert wake["reason"] == "task_blockers_resolved" and wake["task_id"] == task
            assert [b["title"] for b in wake["blockers"]] == [
                f"Decision needed: Question {names[i]}?" for i in wake["resolved_blocker_ids"]
            ]
            assert all(b["decision"]["option"] == "approve" for b in wake["blockers"])


def test_a_blocker_that_already_woke_the_task_is_not_added_again(runtime: Runtime) -> None:
    # Given a task woken with e1's decision
    task, e1 = f"T-{secrets.token_hex(4)}", new_case(runtime, "Which provider?")
    assert blockers.link(runtime, task, [e1], WAKE)["created"]
    resolve(runtime, e1)
    blockers.release_ready(runtime)
    # When e1 is added again, with a new one
    e3 = new_case(runtime, "Which scopes?")
    again = blockers.link(runtime, task, [e1, e3], WAKE)
    # Then only the new one starts the next set, and the answer says why e1 is not in it
    assert (again["added"], again["already_woken"], again["created"]) == ([e3], [e1], True)
    assert [card["escalation_id"] for card in again["blockers"]] == [e3]
    # And adding e1 alone changes nothing
    alone = blockers.link(runtime, task, [e1], WAKE)
    assert (alone["added"], alone["already_woken"], alone["created"]) == ([], [e1], False)


# --- races with the sweep: PostgreSQL, where link and release run side by side ------------------


def test_a_blocker_added_between_the_sweeps_read_and_its_claim_holds_the_wake_back(
    postgres_runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = postgres_runtime
    # Given a task whose one blocker is resolved, and a second blocker on its way
    task = f"T-{secrets.token_hex(4)}"
    e1, e2 = new_case(runtime, "Which provider?"), new_case(runtime, "Which scopes?")
    blockers.link(runtime, task, [e1], WAKE)
    resolve(runtime, e1)
    read = blockers._blockers
    added: list[dict[str, Any]] = []
    sweep = threading.get_ident()

    def read_then_link(session: Session, ids: Any) -> Any:
        found = read(session, ids)
        if threading.get_ident() == sweep and not added and ids == [e1]:
            # The sweep has read the set {e1}: e2 is linked, and committed, before its claim
            runner = threading.Thread(
                target=lambda: added.append(blockers.link(runtime, task, [e2], WAKE))
            )
            runner.start()
            runner.join(timeout=30)
        return found

    monkeypatch.setattr(blockers, "_blockers", read_then_link)
    # When the sweep goes on to claim the set it read
    blockers.release_ready(runtime)
    monkeypatch.undo()
    # Then nothing was woken: e2 joined the set first, and e2 is still open
    assert added and added[0]["added"] == [e2] and not added[0]["created"]
    assert woken_with(runtime, task) == []
    # And once e2 is resolved the task is woken once, with both
    resolve(runtime, e2)
    blockers.release_ready(runtime)
    [wake] = woken_with(runtime, task)
    assert wake["resolved_blocker_ids"] == [e1, e2]


def test_a_blocker_added_while_the_wake_is_being_claimed_starts_the_next_set(
    postgres_runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = postgres_runtime
    # Given a task whose one blocker is resolved
    task = f"T-{secrets.token_hex(4)}"
    e1, e2 = new_case(runtime, "Which provider?"), new_case(runtime, "Which scopes?")
    blockers.link(runtime, task, [e1], WAKE)
    resolve(runtime, e1)
    payload = blockers.wake_payload
    added: list[dict[str, Any]] = []
    runner: list[threading.Thread] = []

    def claimed_then_link(*args: Any) -> Any:
        # The sweep holds the claimed row (uncommitted): a link now waits on its lock
        assert not runner, "one claim only"
        thread = threading.Thread(
            target=lambda: added.append(blockers.link(runtime, task, [e2], WAKE))
        )
        thread.start()
        runner.append(thread)
        wait_until(lambda: lock_waits(runtime), lambda n: n >= 1, timeout=20, what="link waiting")
        return payload(*args)

    monkeypatch.setattr(blockers, "wake_payload", claimed_then_link)
    # When the sweep commits its wake-up
    blockers.release_ready(runtime)
    monkeypatch.undo()
    runner[0].join(timeout=30)
    # Then the wake carries e1 alone, and e2 started the task's next set
    [first] = woken_with(runtime, task)
    assert first["resolved_blocker_ids"] == [e1]
    assert added[0]["created"] and added[0]["added"] == [e2]
    resolve(runtime, e2)
    blockers.release_ready(runtime)
    assert [w["resolved_blocker_ids"] for w in woken_with(runtime, task)] == [[e1], [e2]]


def lock_waits(runtime: Runtime) -> int:
    """Sessions of this database waiting on a row lock."""
    query = text(
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE datname = current_database() AND wait_event_type = 'Lock'"
    )
    with runtime.engine.connect() as connection:
        return int(connection.execute(query).scalar_one())
