"""What the console, the API and the sweep read is found by index: none of it reads a whole
table of cases or of the outbox, which grow for as long as the service runs.

SQLite has no statistics unless ANALYZE runs, so its plan comes from the indexes alone:
a statement that needs a scan shows one here, on a handful of rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event

from tests.api.console_seed import copies, engine_of, raise_case, route

# (the table, what a plan says when it reads every row of it)
WHOLE_TABLE_READS = ("SCAN escalations", "SCAN deliveries", "SCAN events", "SCAN decisions")
# Reads that are one pass over a table on purpose, each bounded by what it counts.
ONE_PASS = (
    # /v1/stats: cases and outbox rows by state, counted over a covering index
    "GROUP BY",
)
PAGES = (
    "/dashboard",
    "/dashboard/queue",
    "/dashboard?state=closed",
    "/dashboard?state=closed&page=2",
    "/dashboard?severity=high",
    "/v1/escalations",
    "/v1/stats",
)
# Sorted after an index read of the open cases alone: as many as are open, not the history
# (on SQLite: PostgreSQL may walk the created-at index instead).
SORTS_OPEN_CASES = ("/v1/escalations?open=true", "/v1/escalations?state=awaiting")
# A run's cases, found through the run-and-packet unique index and sorted: as many as it raised.
ONE_RUN = ("/v1/escalations?run=run-8842", "/dashboard?run=run-8842")


@pytest.fixture
def console(api_client: TestClient) -> Iterator[TestClient]:
    """Signed in as an operator, over open, closed and refused cases."""
    api_client.post("/dashboard/login", data={"token": "op-t", "name": "ana"})
    first = raise_case(api_client, packet_id="t")
    route(api_client, first)
    copies(api_client, first, 12)
    for n in range(3):
        ended = raise_case(api_client, packet_id=f"e{n}")
        route(api_client, ended, state="closed" if n else "refused")
    yield api_client


def plans(client: TestClient, path: str) -> list[tuple[str, list[str]]]:
    """Each statement reading `path` (but the one-pass counts), with its plan's steps."""
    engine = engine_of(client)
    asked: list[tuple[str, Any]] = []

    def keep(_conn: Any, _cursor: Any, sql: str, params: Any, *_rest: Any) -> None:
        if sql.lstrip().upper().startswith(("SELECT", "UPDATE", "WITH")):
            asked.append((sql, params))

    event.listen(engine, "before_cursor_execute", keep)
    try:
        response = client.get(path, headers={"Authorization": "Bearer admin-t"})
    finally:
        event.remove(engine, "before_cursor_execute", keep)
    assert response.status_code == 200, (path, response.text[:300])
    with engine.connect() as connection:
        explain = connection.exec_driver_sql
        return [
            (sql, [str(row[-1]) for row in explain(f"EXPLAIN QUERY PLAN {sql}", params)])
            for sql, params in asked
            if not any(marker in sql for marker in ONE_PASS)
        ]


def whole_table_reads(client: TestClient, path: str, *, sorts_open: bool = False) -> list[str]:
    """The plans of the statements reading `path` that read a whole table."""
    found = []
    for sql, steps in plans(client, path):
        limited = " LIMIT " in sql and not sorts_open
        if any(_reads_whole(step, limited=limited) for step in steps):
            found.append(f"{' '.join(sql.split())[:200]} -> {' | '.join(steps)}")
    return found


def _reads_whole(step: str, *, limited: bool) -> bool:
    """A plan step that reads every row of a growing table, or sorts every row it found
    for a statement that wants a few (LIMIT)."""
    whole = any(step == scan or (step.startswith(f"{scan} ") and "USING" not in step)
                for scan in WHOLE_TABLE_READS)  # fmt: skip
    return whole or (limited and step == "USE TEMP B-TREE FOR ORDER BY")


@pytest.mark.parametrize("path", PAGES)
def test_no_page_reads_a_whole_table(console: TestClient, path: str) -> None:
    # Given open and ended cases / When the page is read
    # Then every statement it made reads by index
    assert whole_table_reads(console, path) == []


@pytest.mark.parametrize("path", SORTS_OPEN_CASES)
def test_the_open_cases_are_read_by_index(console: TestClient, path: str) -> None:
    # Given open and ended cases / When the API lists open cases
    # Then no statement reads a whole table (their sort is of the open cases only)
    assert whole_table_reads(console, path, sorts_open=True) == []


@pytest.mark.parametrize("path", ONE_RUN)
def test_a_runs_cases_are_read_by_index(console: TestClient, path: str) -> None:
    # Given cases of several runs / When one run's are listed
    # Then the cases are searched for by run (their sort is of that run's cases only)
    by_run = [steps for sql, steps in plans(console, path) if "escalations.run_id = " in sql]
    assert by_run, "no statement filtered by run"
    for steps in by_run:
        assert any(s.startswith("SEARCH escalations USING ") for s in steps), steps
        assert not any(_reads_whole(s, limited=False) for s in steps), steps
