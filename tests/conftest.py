"""Shared fixtures: the real Celery worker plugin and a local HTTP sink."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.sink import HttpSink, start_sink

pytest_plugins = ("celery.contrib.pytest",)


@pytest.fixture
def sink() -> Iterator[HttpSink]:
    server = start_sink()
    yield server
    server.server.shutdown()
    server.server.server_close()
