"""Engine and session factory: SQLite (WAL, busy timeout, BEGIN IMMEDIATE) or PostgreSQL."""

from __future__ import annotations

import select
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from sqlalchemy import CTE, String, bindparam, event, func, text, true
from sqlalchemy import exc as sa_exc
from sqlalchemy import select as sa_select
from sqlalchemy.engine import Engine
from sqlmodel import Session, create_engine

from models.settings import Settings
from models.state_files import private_file, private_folder
from workflows.errors import StoreUnavailable


def _tune_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take BEGIN over from pysqlite so every transaction can be IMMEDIATE: a deferred
        # read-then-write transaction fails under concurrent writers even with WAL.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA busy_timeout=30000")  # before WAL: switching can be BUSY
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")


def _closed_by_server(dbapi_connection: Any) -> bool:
    """An idle connection has nothing to read unless the server sent its goodbye (a restart,
    pg_terminate_backend, an idle timeout) or closed the socket: a poll, no round trip."""
    if getattr(dbapi_connection, "closed", False) or getattr(dbapi_connection, "broken", False):
        return True
    poller = select.poll()
    poller.register(dbapi_connection.fileno(), select.POLLIN | select.POLLPRI)
    return bool(poller.poll(0))


def _replace_closed_connections(engine: Engine) -> None:
    # Instead of pool_pre_ping, a SELECT 1 before every transaction (about 7 % of a worker's
    # time, docs/PERFORMANCE.md). A checkout that raises DisconnectionError is discarded and
    # retried with a new connection (SQLAlchemy's documented custom pessimistic check); a
    # loss the poll cannot see invalidates the pool on its first error, as SQLAlchemy does.
    @event.listens_for(engine, "checkout")
    def on_checkout(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        if _closed_by_server(dbapi_connection):
            raise sa_exc.DisconnectionError("the server closed this pooled connection")


_BOOKKEEPING = "escalation_bookkeeping"  # an execution option: see `transaction`
_ALONE = "escalation_one_statement"  # an execution option: see `transaction`
_one_trip: weakref.WeakSet[Engine] = weakref.WeakSet()  # engines whose BEGIN is ours


def _begin_in_one_trip(engine: Engine) -> None:
    # psycopg sends its own BEGIN, a round trip, and a bookkeeping transaction then needed a
    # second one for its SET LOCAL (8 a case). In autocommit mode psycopg sends no BEGIN, so
    # ours carries the setting; its commit() and rollback() still end what the server has
    # open. (psycopg2's commit() would not: it only commits a BEGIN it sent itself.) Not for
    # an isolation level set per connection (psycopg puts it on a BEGIN of its own, which is
    # never sent now) nor raw_connection() work, which commits statement by statement: we
    # use neither, but bench/sweep.py's COPY load is therefore not one transaction.
    @event.listens_for(engine, "connect")
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.autocommit = True

    @event.listens_for(engine, "begin")
    def on_begin(connection: Any) -> None:
        options = connection.get_execution_options()
        if options.get(_ALONE):  # the statement is its own transaction: no BEGIN, no COMMIT
            return
        if options.get(_BOOKKEEPING):
            connection.exec_driver_sql("BEGIN; SET LOCAL synchronous_commit = off")
        else:
            connection.exec_driver_sql("BEGIN")

    _one_trip.add(engine)


def make_engine(settings: Settings) -> Engine:
    """An engine for the configured database; SQLite files live under `settings.home`."""
    url = settings.resolved_database_url
    if url.startswith("sqlite"):
        private_folder(settings.home)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        if engine.url.database and engine.url.database != ":memory:":
            # Made 0600 before SQLite opens it; its -wal and -shm files take the same mode.
            private_file(Path(engine.url.database))
        _tune_sqlite(engine)
        return engine
    engine = create_engine(url)
    _replace_closed_connections(engine)
    if engine.dialect.driver == "psycopg":
        _begin_in_one_trip(engine)
    return engine


def unavailable(error: BaseException) -> bool:
    """A database that did not answer (connection refused or lost, server restarting, a
    lock or pool timeout), as opposed to a statement it refused."""
    if isinstance(error, sa_exc.DBAPIError) and error.connection_invalidated:
        return True
    return isinstance(
        error,
        sa_exc.OperationalError
        | sa_exc.InterfaceError
        | sa_exc.DisconnectionError
        | sa_exc.TimeoutError,
    )


def runs_alone(engine: Engine) -> bool:
    """Whether `transaction(engine, one_statement=True)` runs its statement as a transaction of
    its own, with no BEGIN or COMMIT sent (PostgreSQL through psycopg)."""
    return engine in _one_trip


def commit_setting() -> CTE:
    """For a statement run alone (`transaction(..., one_statement=True)`, PostgreSQL): a CTE
    setting the synchronous_commit of its own commit to the bound `sync` ('off': the commit
    does not wait for the disk; None: the setting in force). The statement must read it.
    `set_config(..., true)` lasts until that commit, so the connection keeps its setting."""
    in_force = func.current_setting("synchronous_commit")
    return sa_select(
        func.set_config(
            "synchronous_commit",
            func.coalesce(bindparam("sync", type_=String), in_force),
            true(),
        )
    ).cte("sync")


@contextmanager
def transaction(
    engine: Engine, *, bookkeeping: bool = False, one_statement: bool = False
) -> Iterator[Session]:
    """A session whose work commits on success and rolls back on any error; a database that
    does not answer raises StoreUnavailable (our error tree: worth retrying).

    `bookkeeping`: work that a database crash may lose without harm (an attempt counter, a
    lease, a step that is simply taken again), so on PostgreSQL its commit does not wait
    for the disk; it is visible at once, and the next commit that waits makes it durable
    too. Waiting on the disk was most of a case's time (docs/PERFORMANCE.md).

    `one_statement`: the caller runs exactly one statement, which on PostgreSQL then commits
    by itself: one round trip where BEGIN, the statement and COMMIT took three. Nothing is
    left to roll back (a statement that fails changes nothing), and a second statement would
    commit on its own: one statement only. It says its own `synchronous_commit` if it needs
    one (`commit_setting`), as `bookkeeping` then has no transaction to set it in. Elsewhere
    (`runs_alone` false) it is an ordinary transaction, `bookkeeping` as asked."""
    one_trip = bookkeeping and engine in _one_trip
    bind = engine.execution_options(**{_BOOKKEEPING: True}) if one_trip else engine
    if one_statement and runs_alone(engine):
        bind = engine.execution_options(**{_ALONE: True})
    with Session(bind, expire_on_commit=False) as session:
        try:
            if bookkeeping and not one_trip and engine.dialect.name == "postgresql":
                session.execute(text("SET LOCAL synchronous_commit = off"))
            yield session
            session.commit()
        except BaseException as error:
            if not unavailable(error):
                session.rollback()
                raise
            with suppress(sa_exc.SQLAlchemyError):  # the connection, and its transaction, is gone
                session.rollback()
            raise StoreUnavailable(
                f"the database is unavailable ({type(error).__name__})"
            ) from error
