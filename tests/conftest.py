"""Shared fixtures: a local HTTP sink; the chaos package first."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.sink import HttpSink, start_sink


@pytest.fixture
def sink() -> Iterator[HttpSink]:
    server = start_sink()
    yield server
    server.server.shutdown()
    server.server.server_close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The chaos package runs first. Its deployment (a Redis, a PostgreSQL cluster, workers
    and beats) is per process, about 15 s of CPU to start: first in the order, its tests all
    go to the one process that xdist's work stealing hands the first tests to, before any
    stealing (which takes from the end of a queue) can split them."""
    items.sort(key=lambda item: not item.nodeid.startswith("tests/chaos/"))
