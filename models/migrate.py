"""Bring the database to the newest schema with Alembic (run at start and in tests).

Every process that starts runs this, so the common cases are cheap: a database already at
head costs one query, and an empty one is built from the models and stamped at head (as
Alembic's cookbook builds "an up to date database from scratch") instead of loading and
replaying every migration, about 80 ms a database. Only a database at an older revision
runs migrations. tests/models/test_migrations.py holds the migrations to exactly the
models' schema, so both ways build the same database.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect
from sqlmodel import SQLModel

from models import tables  # noqa: F401  (registers the tables on the metadata)
from models.db import make_engine
from models.settings import Settings
from models.state_files import private_folder

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def _scripts_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def alembic_config(settings: Settings) -> Config:
    config = _scripts_config()
    config.set_main_option("sqlalchemy.url", settings.resolved_database_url)
    return config


@cache
def _scripts() -> ScriptDirectory:
    """The migration scripts, read once per process."""
    return ScriptDirectory.from_config(_scripts_config())


def upgrade(settings: Settings) -> None:
    """Apply every migration not yet applied; safe to run on every start."""
    private_folder(settings.home)
    engine = make_engine(settings)
    try:
        with engine.begin() as connection:  # SQLite: BEGIN IMMEDIATE, so one starter builds
            context = MigrationContext.configure(connection)
            current = context.get_current_revision()
            if current == _scripts().get_current_head():
                return
            if current is None and not inspect(connection).get_table_names():
                SQLModel.metadata.create_all(connection)
                context.stamp(_scripts(), "head")
                return
    finally:
        engine.dispose()
    command.upgrade(alembic_config(settings), "head")
