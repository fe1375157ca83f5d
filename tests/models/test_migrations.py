"""The Alembic migrations build exactly the schema the models describe."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlmodel import SQLModel

import models.tables  # noqa: F401  (registers the tables)
from models.db import make_engine
from models.migrate import upgrade
from models.settings import Settings
from tests.support.services import fresh_postgres_database


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Settings]:
    if request.param == "sqlite":
        yield Settings(home=tmp_path)
        return
    with fresh_postgres_database() as url:
        yield Settings(home=tmp_path, database_url=url)


def test_upgrading_an_empty_database_gives_the_models_schema(settings: Settings) -> None:
    upgrade(settings)
    upgrade(settings)  # and running it again on start is harmless
    engine = make_engine(settings)
    with engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), SQLModel.metadata)
    engine.dispose()
    assert differences == []
