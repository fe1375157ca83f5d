"""Bring the database to the newest schema with Alembic (run at start and in tests).

Every process that starts runs this, so the common cases are cheap: a database already at
head costs two queries, and an empty one is built from the models and stamped at head (as
Alembic's cookbook builds "an up to date database from scratch") instead of loading and
replaying every migration, about 80 ms a database. Only a database at an older revision
runs migrations. tests/models/test_migrations.py holds the migrations to exactly the
models' schema, so both ways build the same database.

Alembic is imported only where it works (about 0.4 s of CPU, most of it Mako and Pygments
pulled in at import, and its scripts read): a process whose database is at the newest
revision, or empty, never loads it. The stamp writes Alembic's version table as Alembic
makes it (a test compares the two).
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Column, MetaData, PrimaryKeyConstraint, String, Table, inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlmodel import SQLModel

from models import tables  # noqa: F401  (registers the tables on the metadata)
from models.db import make_engine
from models.settings import Settings
from models.state_files import private_folder

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
VERSION_TABLE = "alembic_version"
# PostgreSQL's advisory lock key for building or migrating ("escalate" in ASCII)
MIGRATION_LOCK = 0x6573_6361_6C61_7465
# Alembic's version table, as alembic/ddl/impl.py `version_table_impl` defines it
VERSIONS = Table(
    VERSION_TABLE,
    MetaData(),
    Column("version_num", String(32), nullable=False),
    PrimaryKeyConstraint("version_num", name=f"{VERSION_TABLE}_pkc"),
)


def _scripts_config() -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def alembic_config(settings: Settings) -> Config:
    config = _scripts_config()
    config.set_main_option("sqlalchemy.url", settings.resolved_database_url)
    return config


@cache
def newest_revision() -> str:
    """The head revision, read from the scripts' file names without Alembic: each script is
    named for its revision (0080_acks_and_chain_steps.py holds '0080'), and
    tests/models/test_migrations.py holds every name and the head to Alembic's own reading."""
    scripts = (MIGRATIONS / "versions").glob("[0-9]*_*.py")
    return max(path.name.split("_", 1)[0] for path in scripts)


def hold_migration_lock(connection: Connection) -> None:
    """On PostgreSQL, wait until no other process builds or migrates this database; held
    until the transaction ends. The API, workers and beat of a deployment start at once, and
    two building an empty database both failed on the first table (UniqueViolation)."""
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})


@contextmanager
def _one_starter(engine: Engine) -> Iterator[None]:
    """On SQLite, one process at a time past this point (a lock file beside the database):
    BEGIN IMMEDIATE alone let a second starter meet the first one's switch to WAL as
    "database is locked"."""
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        yield
        return
    with open(f"{database}.migrate-lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def upgrade(settings: Settings) -> None:
    """Apply every migration not yet applied; safe to run on every start, by many at once."""
    private_folder(settings.home)
    engine = make_engine(settings)
    with _one_starter(engine):
        try:
            with engine.begin() as connection:
                hold_migration_lock(connection)
                names = inspect(connection).get_table_names()
                if VERSION_TABLE in names:
                    current = connection.scalar(text(f"SELECT version_num FROM {VERSION_TABLE}"))
                    if current == newest_revision():
                        return
                elif not names:
                    SQLModel.metadata.create_all(connection)
                    VERSIONS.create(connection)
                    connection.execute(VERSIONS.insert().values(version_num=newest_revision()))
                    return
        finally:
            engine.dispose()
        from alembic import command

        command.upgrade(alembic_config(settings), "head")
