"""Intake asks, for every new case, whether its question is already open at its severity
(SPEC §9). On a PostgreSQL without statistics (autovacuum off, as on this project's CI
machine) that lookup read every case of the severity; now it reads its own index alone."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine

from models.db import transaction
from models.store import open_case_for_question
from models.tables import Escalation
from tests.support.stores import migrated_store
from workflows.states import State

CASES = 3000  # one severity, as a service whose agents raise at one level holds


@pytest.fixture
def postgres(tmp_path: Path) -> Iterator[Engine]:
    with migrated_store(tmp_path, "postgresql") as engine:
        yield engine


def case(index: int, state: State) -> Escalation:
    return Escalation(
        id=f"c{index}", run_id="r", packet_id=f"p{index}", severity="medium",
        trigger_type="blocked", state=state, question_key=f"{index:064x}",
    )  # fmt: skip


def asked(engine: Engine, row: Escalation) -> tuple[str, dict[str, Any]]:
    """The SQL and parameters intake's lookup sends for `row`."""
    seen: list[tuple[str, dict[str, Any]]] = []

    def keep(_conn: Any, _cursor: Any, sql: str, params: Any, *_rest: Any) -> None:
        if "question_key" in sql and sql.lstrip().startswith("SELECT"):
            seen.append((sql, dict(params)))

    event.listen(engine, "before_cursor_execute", keep)
    try:
        with transaction(engine) as session:
            found = open_case_for_question(session, row)
    finally:
        event.remove(engine, "before_cursor_execute", keep)
    assert found is not None and found.id == f"c{CASES}"  # the open one, not a closed one
    [statement] = seen
    return statement


def literal(value: object) -> str:
    """A parameter written into EXECUTE's text, which takes no bound parameters."""
    return str(value) if isinstance(value, int) else "'" + str(value).replace("'", "''") + "'"


def plans(engine: Engine, sql: str, params: dict[str, Any]) -> dict[str, str]:
    """The plan for these values, and the generic one a prepared statement settles on."""
    names = list(params)
    numbered = re.sub(r"%\((\w+)\)s", lambda m: f"${names.index(m.group(1)) + 1}", sql)
    with engine.connect() as connection:
        custom = connection.exec_driver_sql(f"EXPLAIN {sql}", params).scalars().all()
        connection.exec_driver_sql(f"PREPARE lookup AS {numbered}")
        connection.exec_driver_sql("SET plan_cache_mode = force_generic_plan")
        values = ", ".join(literal(params[name]) for name in names)
        generic = connection.exec_driver_sql(f"EXPLAIN EXECUTE lookup({values})")
        generic_plan = generic.scalars().all()
        connection.rollback()
    return {"custom": "\n".join(custom), "generic": "\n".join(generic_plan)}


def test_the_open_question_lookup_reads_its_own_index_without_statistics(
    postgres: Engine,
) -> None:
    # Given many closed cases of one severity and one open, never analysed
    with transaction(postgres) as session:
        session.add_all(case(index, State.CLOSED) for index in range(CASES))
        session.add(case(CASES, State.AWAITING))
    # When intake asks for the open one's question (from another packet)
    resend = case(CASES, State.RECEIVED)
    resend.packet_id = "another-packet"
    sql, params = asked(postgres, resend)
    # Then both plans read the question's own index, never every case of the severity
    for kind, plan in plans(postgres, sql, params).items():
        assert "ix_escalations_open_question" in plan, (kind, plan)
        assert "ix_escalations_severity" not in plan, (kind, plan)
