"""A stage's attempt is counted before its work, in a commit of its own: one statement that
commits by itself on PostgreSQL, not waiting for the disk; a case that keeps failing is parked."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from sqlalchemy import event, text
from sqlalchemy.engine import Engine

from models.db import transaction
from models.tables import Escalation
from tests.support.stores import migrated_store
from workers.runtime import Runtime
from workers.stage_runs import _COUNT_ATTEMPT_ALONE, Attempt, _park, begin_attempt
from workflows.states import State

MAX_ATTEMPTS = 2
NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


@contextmanager
def decided_case(home: Path, kind: str) -> Iterator[Engine]:
    """A store holding case c1, decided (the close stage's next)."""
    with migrated_store(home, kind) as engine:
        with transaction(engine) as session:
            session.add(
                Escalation(
                    id="c1", run_id="r", packet_id="p", severity="low", trigger_type="blocked",
                    state=State.DECIDED, packet={}, snapshot={"fingerprint": {"kind": "none"}},
                )
            )  # fmt: skip
        yield engine


@pytest.fixture(params=["postgresql", "sqlite"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    with decided_case(tmp_path, request.param) as engine:
        yield engine


def runtime(engine: Engine) -> Runtime:
    return cast(
        Runtime,
        SimpleNamespace(engine=engine, settings=SimpleNamespace(max_stage_attempts=MAX_ATTEMPTS)),
    )


def case(engine: Engine) -> tuple[str, int, list[str]]:
    """c1's state, attempts and the kinds of its events."""
    with engine.connect() as connection:
        state, attempts = connection.execute(
            text("SELECT state, attempts FROM escalations WHERE id = 'c1'")
        ).one()
        kinds = connection.execute(text("SELECT kind FROM events WHERE escalation_id = 'c1'"))
        return str(state), int(attempts), list(kinds.scalars())


def test_an_attempt_is_counted_and_what_the_stage_reads_comes_back(engine: Engine) -> None:
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement.lstrip().upper())

    event.listen(engine, "before_cursor_execute", seen)
    try:
        attempt = begin_attempt(runtime(engine), "c1", State.DECIDED)
    finally:
        event.remove(engine, "before_cursor_execute", seen)

    assert attempt == Attempt("c1", 1, {"fingerprint": {"kind": "none"}}, cited=False)
    assert case(engine) == ("decided", 1, [])
    if engine.dialect.name == "postgresql":
        # one round trip: no BEGIN (psycopg sends none in autocommit), the count commits itself
        assert len(statements) == 1 and statements[0].startswith("WITH SYNC AS")
        with engine.connect() as connection:
            assert connection.execute(text("SHOW synchronous_commit")).scalar_one() == "on"


def test_a_stage_already_done_counts_nothing(engine: Engine) -> None:
    assert begin_attempt(runtime(engine), "c1", State.AWAITING) is None
    assert begin_attempt(runtime(engine), "nobody", State.DECIDED) is None
    assert case(engine) == ("decided", 0, [])


def test_a_case_that_keeps_failing_is_parked_once(engine: Engine) -> None:
    for _ in range(MAX_ATTEMPTS):
        assert begin_attempt(runtime(engine), "c1", State.DECIDED) is not None

    assert begin_attempt(runtime(engine), "c1", State.DECIDED) is None
    assert case(engine) == ("dead_letter", MAX_ATTEMPTS + 1, ["dead_lettered"])
    # a repeat of the message finds it parked: no second count, no second event
    assert begin_attempt(runtime(engine), "c1", State.DECIDED) is None
    assert case(engine) == ("dead_letter", MAX_ATTEMPTS + 1, ["dead_lettered"])


def test_a_case_that_moved_on_after_its_count_is_not_parked(engine: Engine) -> None:
    # Given a count past the limit, and before its park the case was reassigned (its count
    # reset), or another run counted again and parks it itself
    over = Attempt("c1", MAX_ATTEMPTS + 1, {}, cited=False)
    for reset_to in (0, MAX_ATTEMPTS + 2):
        with engine.begin() as connection:
            connection.execute(
                text("UPDATE escalations SET attempts = :n WHERE id = 'c1'"), {"n": reset_to}
            )
        # When the first count's park comes
        _park(runtime(engine), over, State.DECIDED, now=NOW)
        # Then it leaves the case as it is now
        assert case(engine) == ("decided", reset_to, [])


def test_the_count_commits_without_waiting_for_the_disk(tmp_path: Path) -> None:
    # The setting is made by a CTE the count only reads in its WHERE: it must still run
    with decided_case(tmp_path, "postgresql") as engine, engine.begin() as connection:
        params = {"case": "c1", "expected": "decided", "now": NOW, "sync": "off"}
        assert connection.execute(_COUNT_ATTEMPT_ALONE, params).one().attempts == 1
        assert connection.execute(text("SHOW synchronous_commit")).scalar_one() == "off"
