"""A migrated store for a test: SQLite under the test's folder, or a fresh PostgreSQL database."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy.engine import Engine

from models.db import make_engine
from models.migrate import upgrade
from models.settings import Settings
from tests.support.services import fresh_postgres_database


@contextmanager
def migrated_store(home: Path, kind: str = "sqlite") -> Iterator[Engine]:
    """The engine of a store at the newest schema, disposed after; `kind` is "sqlite" or
    "postgresql" (a database of its own, dropped after)."""
    if kind == "sqlite":
        settings = Settings(home=home)
        upgrade(settings)
        engine = make_engine(settings)
        yield engine
        engine.dispose()
        return
    with fresh_postgres_database() as url:
        settings = Settings(home=home, database_url=url)
        upgrade(settings)
        engine = make_engine(settings)
        yield engine
        engine.dispose()
