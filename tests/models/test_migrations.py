"""The Alembic migrations build exactly the schema the models describe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, SQLModel, col, select

import models.tables  # noqa: F401  (registers the tables)
from models.db import make_engine
from models.migrate import MIGRATIONS, alembic_config, newest_revision, upgrade
from models.settings import Settings
from models.tables import TaskWait
from tests.support.services import fresh_postgres_database
from workflows.blockers import blocker_set_key

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Settings]:
    if request.param == "sqlite":
        yield Settings(home=tmp_path)
        return
    with fresh_postgres_database() as url:
        yield Settings(home=tmp_path, database_url=url)


def schema_differences(settings: Settings) -> tuple[list[object], str | None]:
    """What the database lacks or has beyond the models, and its Alembic revision."""
    engine = make_engine(settings)
    with engine.connect() as connection:
        context = MigrationContext.configure(connection)
        differences = compare_metadata(context, SQLModel.metadata)
        revision = context.get_current_revision()
    engine.dispose()
    return differences, revision


def head() -> str | None:
    return ScriptDirectory.from_config(alembic_config(Settings())).get_current_head()


def test_head_names_the_newest_migration() -> None:
    # A start compares the database with the newest revision without loading Alembic, by
    # the scripts' file names: each must be named for its revision, and the newest is head
    scripts = ScriptDirectory.from_config(alembic_config(Settings()))
    for script in scripts.walk_revisions():
        assert script.path is not None
        assert Path(script.path).name.startswith(f"{script.revision}_"), script.path
    assert sorted(p.name for p in (MIGRATIONS / "versions").glob("[0-9]*_*.py")) == sorted(
        Path(s.path).name for s in scripts.walk_revisions() if s.path
    )
    assert head() == newest_revision()


def test_every_migration_from_empty_gives_the_models_schema(settings: Settings) -> None:
    command.upgrade(alembic_config(settings), "head")
    assert schema_differences(settings) == ([], head())


def test_an_empty_database_is_built_at_head_and_upgrading_again_changes_nothing(
    settings: Settings,
) -> None:
    # An empty database is made from the models and stamped (what every start then reads)
    upgrade(settings)
    assert schema_differences(settings) == ([], head())
    upgrade(settings)  # and running it again on start is harmless
    assert schema_differences(settings) == ([], head())


def test_open_blocker_sets_of_one_task_become_one_set(settings: Settings) -> None:
    # Given a database at 0031 where blockers added one at a time made two open sets for T-1
    # (the bug: each woke the task on its own), a woken set, and another task's open set
    command.upgrade(alembic_config(settings), "0031")
    engine = make_engine(settings)
    rows = [
        ("T-1", ["e1"], None),
        ("T-1", ["e1", "e2"], None),
        ("T-1", ["e0"], "2026-12-01T09:00:00+00:00"),
        ("T-2", ["e9"], None),
    ]
    with engine.begin() as connection:
        for index, (task, ids, woken_at) in enumerate(rows):
            connection.execute(
                text(
                    "INSERT INTO task_waits (id, task, set_key, escalation_ids, wake, woken_at)"
                    " VALUES (:id, :task, :key, :ids, :wake, :woken_at)"
                ),
                {
                    "id": index + 1,
                    "task": task,
                    "key": f"k{index}",
                    "ids": json.dumps(ids),
                    "wake": json.dumps({"task": "agent.wake"}),
                    "woken_at": woken_at,
                },
            )
    # When upgraded
    upgrade(settings)
    # Then T-1 has one open set holding both blockers in the order added, versioned anew
    with Session(engine) as session:
        waits = session.exec(select(TaskWait).order_by(col(TaskWait.id))).all()
        found = [(w.task, w.escalation_ids, w.woken_at is None) for w in waits]
        merged_key = waits[0].set_key
    assert found == [("T-1", ["e1", "e2"], True), ("T-1", ["e0"], False), ("T-2", ["e9"], True)]
    assert merged_key == blocker_set_key(["e1", "e2"])
    # And a second open set for a task is refused by the database itself
    with pytest.raises(IntegrityError), Session(engine) as session:
        session.add(TaskWait(task="T-2", set_key="x", escalation_ids=["e8"], wake={}))
        session.commit()
    engine.dispose()


def test_an_empty_database_is_stamped_with_alembics_own_version_table(settings: Settings) -> None:
    engine = make_engine(settings)

    def version_table() -> tuple[object, ...]:
        with engine.connect() as connection:
            found = inspect(connection)
            columns = [
                (c["name"], str(c["type"]), c["nullable"])
                for c in found.get_columns("alembic_version")
            ]
            revision = MigrationContext.configure(connection).get_current_revision()
            return columns, found.get_pk_constraint("alembic_version"), revision

    # Given the version table a start writes without loading Alembic
    upgrade(settings)
    ours = version_table()
    # When Alembic stamps the same database itself
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE alembic_version"))
        MigrationContext.configure(connection).stamp(
            ScriptDirectory.from_config(alembic_config(settings)), "head"
        )
    # Then it made the same table, the same way, at the same revision
    assert version_table() == ours
    engine.dispose()


def test_starts_at_once_on_an_empty_database_build_it_once(settings: Settings) -> None:
    # Given an empty database, and the API, a worker and a beat starting on it together
    # (a compose file starts them at once), each with its own engine
    ready = threading.Barrier(3)
    failures: list[BaseException] = []

    def start() -> None:
        ready.wait()
        try:
            upgrade(settings)
        except BaseException as exc:
            failures.append(exc)

    starts = [threading.Thread(target=start) for _ in range(3)]
    for thread in starts:
        thread.start()
    for thread in starts:
        thread.join(timeout=60)
    # Then every start succeeds, and the database is the models' at head
    assert failures == []
    assert schema_differences(settings) == ([], head())


def test_starts_at_once_on_an_older_database_migrate_it_once(settings: Settings) -> None:
    # Given a database at an older revision, and two processes starting on it together
    # (processes: Alembic keeps its running migration in module globals, one per process)
    command.upgrade(alembic_config(settings), "0090")
    env = {
        **os.environ,
        "ESCALATE_HOME": str(settings.home),
        "ESCALATE_DATABASE_URL": settings.resolved_database_url,
    }
    code = "from models.migrate import upgrade; from models.settings import Settings; "
    code += "upgrade(Settings())"
    starts = [
        subprocess.Popen([sys.executable, "-c", code], env=env, cwd=REPO, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    # Then both succeed, and the database is the models' at head
    errors = [start.communicate(timeout=120)[1].decode()[-600:] for start in starts]
    assert [start.returncode for start in starts] == [0, 0], errors
    assert schema_differences(settings) == ([], head())
