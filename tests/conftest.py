"""Shared fixtures: a local HTTP sink, the process's shared workers; the chaos package first."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.shared_worker import SharedWorkers
from tests.support.sink import HttpSink, start_sink


@pytest.fixture
def sink() -> Iterator[HttpSink]:
    server = start_sink()
    yield server
    server.server.shutdown()
    server.server.server_close()


@pytest.fixture(scope="session")
def shared_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedWorkers]:
    """This test process's Celery workers, one per broker, lent to one live test at a time.
    Defined once, here: a second set in the same process would run a second Redis worker,
    and kombu keeps one event loop per process."""
    workers = SharedWorkers(tmp_path_factory.mktemp("shared-worker") / "home")
    yield workers
    workers.stop()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The chaos package runs first. Its deployment (a Redis, a PostgreSQL cluster, workers
    and beats) is per process, about 15 s of CPU to start: first in the order, its tests all
    go to the one process that xdist's work stealing hands the first tests to, before any
    stealing (which takes from the end of a queue) can split them."""
    items.sort(key=lambda item: not item.nodeid.startswith("tests/chaos/"))
