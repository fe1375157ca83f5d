"""Alembic environment: the URL comes from the caller's config; SQLite uses batch mode."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

from models import tables  # noqa: F401  (registers the tables on the metadata)
from models.db import make_engine
from models.migrate import hold_migration_lock
from models.settings import Settings

config = context.config
url = config.get_main_option("sqlalchemy.url")
engine = make_engine(Settings(database_url=url) if url else Settings())

with engine.connect() as connection:
    context.configure(
        connection=connection,
        target_metadata=SQLModel.metadata,
        render_as_batch=connection.dialect.name == "sqlite",  # SQLite has almost no ALTER
    )
    with context.begin_transaction():
        hold_migration_lock(connection)  # another starter migrating waits, then finds head
        context.run_migrations()
engine.dispose()
