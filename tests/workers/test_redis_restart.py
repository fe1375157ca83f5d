"""A worker outlives Redis restarting while one of its tasks is in flight (workers/redis_broker.py).

With kombu's own transport, Celery 5.7's reconnect put the in-flight task's message back
through a transport it had already closed, read that as an unrecoverable error, and the
worker exited: every Redis restart under load stopped the workers it hit.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from celery import Celery

from models.settings import Settings
from tests.chaos.cluster import Process, RedisServer
from tests.support.processes import settings_env
from tests.support.services import require_program
from tests.support.waiting import wait_until
from workers.app import make_celery


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis of the test's own: this test kills it."""
    require_program("redis-server", "this test runs a Redis of its own")
    server = RedisServer(tmp_path / "redis")
    server.start()
    yield server
    server.stop()


def test_a_worker_with_a_task_in_flight_outlives_redis_restarting_empty(
    redis: RedisServer, tmp_path: Path
) -> None:
    # Given a prefork worker, as deployed, running a task that holds its slot for a while
    marks = tmp_path / "marks"
    marks.mkdir()
    settings = Settings(home=tmp_path / "home", broker_url=redis.url, queue="restart-test")
    env = settings_env(settings)
    agent: Celery = make_celery(settings, tasks=False)
    command = [sys.executable, "-m", "celery", "-A", "tests.support.held_task_app", "worker"]
    command += ["--pool", "prefork", "--concurrency", "2", "--loglevel", "info"]
    command += ["--without-mingle", "--without-gossip", "--without-heartbeat"]
    log = tmp_path / "worker.log"
    worker = Process("worker", command, env, log).start()
    try:
        agent.send_task("test.hold", args=[str(marks), "first", 4.0])
        wait_until((marks / "first.started").exists, timeout=60, what="the first task to start")
        # When Redis is killed and comes back empty while that task runs
        redis.kill_and_restart_empty()
        # Then the worker is still there, and takes the next task once Redis is back
        agent.send_task("test.hold", args=[str(marks), "second", 0.0])
        wait_until(
            lambda: (marks / "second.done").exists() or not worker.alive(),
            timeout=60,
            what="the task sent after the restart",
        )
        output = log.read_text(errors="replace")
        assert worker.alive() and "Unrecoverable error" not in output, output[-3000:]
        assert (marks / "second.done").exists()
    finally:
        worker.stop()
