"""The database boundary: one that does not answer is our StoreUnavailable; a refusal is not."""

from __future__ import annotations

import socket
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from models.db import make_engine, transaction
from models.migrate import upgrade
from models.settings import Settings
from models.store import citing_open_cases
from models.tables import Escalation
from tests.support.services import fresh_postgres_database
from tests.support.waiting import wait_until
from workflows.errors import RetryableError, StoreUnavailable
from workflows.states import State


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port  # nothing listens once the probe is closed


def test_a_database_that_refuses_connections_is_store_unavailable(tmp_path: Path) -> None:
    # Given a PostgreSQL URL nothing listens on
    url = f"postgresql+psycopg://postgres@127.0.0.1:{closed_port()}/none"
    engine = make_engine(Settings(home=tmp_path, database_url=url))
    # When a transaction runs / Then it is a retryable error of ours, naming no address
    with pytest.raises(StoreUnavailable) as raised, transaction(engine) as session:
        session.execute(text("SELECT 1"))
    assert isinstance(raised.value, RetryableError)
    assert "127.0.0.1" not in str(raised.value)
    engine.dispose()


def test_a_statement_the_database_refuses_is_not_store_unavailable(tmp_path: Path) -> None:
    # Given a migrated SQLite database
    settings = Settings(home=tmp_path)
    upgrade(settings)
    engine = make_engine(settings)
    row = {"run_id": "r", "packet_id": "p", "severity": "low", "trigger_type": "blocked"}
    # When a second row repeats the run and packet / Then the database's own error comes through
    with pytest.raises(IntegrityError), transaction(engine) as session:
        session.add(Escalation(id="x", state=State.RECEIVED, **row))
        session.flush()
        session.add(Escalation(id="y", state=State.RECEIVED, **row))
    engine.dispose()


def test_a_pooled_connection_the_server_closed_is_replaced(tmp_path: Path) -> None:
    # Given a PostgreSQL engine whose one pooled connection the server then terminates
    # (as a restart does), with no round trip before each transaction to notice it
    with fresh_postgres_database() as url:
        engine = make_engine(Settings(home=tmp_path, database_url=url))
        with transaction(engine) as session:
            pid = session.execute(text("SELECT pg_backend_pid()")).scalar_one()
        with psycopg.connect(url.replace("+psycopg", ""), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            wait_until(lambda: _gone(admin, pid), timeout=30, what="the backend to end")
        # When the next transaction runs / Then it gets a new connection and works
        with transaction(engine) as session:
            again = session.execute(text("SELECT pg_backend_pid()")).scalar_one()
        assert again != pid
        engine.dispose()


def _gone(admin: psycopg.Connection, pid: int) -> bool:
    found = admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
    return found is None


@pytest.mark.parametrize("bookkeeping", [False, True])
def test_postgresql_transactions_commit_roll_back_and_wait_for_the_disk_unless_bookkeeping(
    tmp_path: Path, bookkeeping: bool
) -> None:
    # Given a PostgreSQL engine made by make_engine
    with fresh_postgres_database() as url:
        engine = make_engine(Settings(home=tmp_path, database_url=url))
        with transaction(engine) as session:
            session.execute(text("CREATE TABLE kept (x int)"))
        # When one transaction commits and another fails
        with transaction(engine, bookkeeping=bookkeeping) as session:
            setting = session.execute(text("SHOW synchronous_commit")).scalar_one()
            session.execute(text("INSERT INTO kept VALUES (1)"))
        with pytest.raises(ZeroDivisionError), transaction(engine, bookkeeping=bookkeeping) as s:
            s.execute(text("INSERT INTO kept VALUES (2)"))
            raise ZeroDivisionError
        # Then only the first is stored, as another connection sees it, and only bookkeeping
        # skipped the wait for the disk, for its own transaction alone
        with psycopg.connect(url.replace("+psycopg", "")) as other:
            assert other.execute("SELECT x FROM kept").fetchall() == [(1,)]
        assert setting == ("off" if bookkeeping else "on")
        with transaction(engine) as session:
            assert session.execute(text("SHOW synchronous_commit")).scalar_one() == "on"
        engine.dispose()


def test_the_cases_citing_one_are_found_by_index_not_by_reading_every_open_case(
    tmp_path: Path,
) -> None:
    # Given the store on SQLite (no statistics: the plan comes from the indexes alone)
    settings = Settings(home=tmp_path)
    upgrade(settings)
    engine = make_engine(settings)
    # When the query every close makes for the cases citing it is planned
    statement = citing_open_cases("a1b2c3d4e5f6").compile(
        engine, compile_kwargs={"literal_binds": True}
    )
    with engine.connect() as connection:
        plan = " ".join(
            str(row[-1]) for row in connection.execute(text(f"EXPLAIN QUERY PLAN {statement}"))
        )
    engine.dispose()
    # Then it reads the cites index (before: every open case, by the state index)
    assert "ix_escalations_cites_id" in plan, plan
