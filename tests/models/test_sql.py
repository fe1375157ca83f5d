"""Constant IN lists are written into the statement, and select what `in_` would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import bindparam, insert, select
from sqlalchemy.dialects import postgresql

from models.db import make_engine
from models.migrate import upgrade
from models.settings import Settings
from models.sql import none_of, one_of
from models.store import _OPEN_FOR_QUESTION, _REASON_EVENTS, citing_open_cases
from models.tables import CASES
from workers.delivery import _CLAIM
from workers.undelivered import _ANY_HELD, _HELD, _RECORD_SENT_PAGE
from workflows.states import OPEN_FOR_DECISION, TERMINAL, State


def test_one_of_and_none_of_select_what_in_and_not_in_select(tmp_path: Path) -> None:
    # Given cases in every state
    settings = Settings(home=tmp_path)
    upgrade(settings)
    engine = make_engine(settings)
    with engine.begin() as connection:
        connection.execute(
            insert(CASES),
            [
                {
                    "id": f"c{index}",
                    "run_id": "r",
                    "packet_id": f"p{index}",
                    "severity": "low",
                    "trigger_type": "blocked",
                    "state": state,
                    "packet": {},
                    "snapshot": {},
                }
                for index, state in enumerate(State)
            ],
        )

        # When the open ones and the ended ones are asked for both ways
        def ids(where: Any) -> set[str]:
            return set(connection.execute(select(CASES.c.id).where(where)).scalars())

        # Then the written-in lists find the same cases as the bound ones
        assert ids(one_of(CASES.c.state, OPEN_FOR_DECISION)) == ids(
            CASES.c.state.in_([s.value for s in OPEN_FOR_DECISION])
        )
        assert ids(none_of(CASES.c.state, TERMINAL)) == ids(
            CASES.c.state.not_in([s.value for s in TERMINAL])
        )
        assert len(ids(one_of(CASES.c.state, OPEN_FOR_DECISION))) == len(OPEN_FOR_DECISION)
    engine.dispose()


@pytest.mark.parametrize("value", ["it's", "a b", "x'); DROP TABLE escalations; --", ""])
def test_only_plain_names_are_written_into_sql(value: str) -> None:
    # Given a value that is not one of our plain names / When it would be written into SQL
    # Then it is refused, naming it
    with pytest.raises(ValueError, match="not a plain constant"):
        one_of(CASES.c.state, ["awaiting", value])


@pytest.mark.parametrize(
    "statement",
    [
        _CLAIM,
        _RECORD_SENT_PAGE,
        _ANY_HELD,
        _HELD,
        _REASON_EVENTS,
        _OPEN_FOR_QUESTION,
        citing_open_cases(bindparam("original")),
    ],
    ids=["claim", "record", "probe", "held", "reasons", "question", "citing"],
)
def test_the_hot_statements_are_not_rendered_again_at_each_run(statement: Any) -> None:
    # Given a statement a case runs every time (built once) / When it is compiled
    sql = str(statement.compile(dialect=postgresql.dialect()))  # type: ignore[no-untyped-call]
    # Then it has no list SQLAlchemy must render into its text again at each run
    assert "POSTCOMPILE" not in sql, sql
