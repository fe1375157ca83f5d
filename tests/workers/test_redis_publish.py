"""Publishing keeps one Redis client a channel (workers/redis_broker.py): kombu built a new one
for every `send_task`, a fifth of its CPU."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import redis

from models.settings import Settings
from tests.support.services import REDIS, REDIS_URL, require
from workers.app import make_celery


@pytest.fixture
def queue() -> Any:
    require(REDIS, "Redis")
    name = f"publish-test-{uuid.uuid4().hex[:8]}"
    yield name
    redis.Redis.from_url(REDIS_URL).delete(name)


def test_publishes_share_one_client_and_a_dropped_pool_gets_a_new_one(
    tmp_path: Path, queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the agents' Celery app on the Redis broker, counting the Redis clients it builds
    app = make_celery(Settings(home=tmp_path, broker_url=REDIS_URL, queue=queue), tasks=False)
    probe = redis.Redis.from_url(REDIS_URL)
    built: list[redis.Redis] = []
    real_init = redis.Redis.__init__

    def counting_init(self: redis.Redis, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        built.append(self)

    def on(pool: Any) -> list[redis.Redis]:
        """The clients built on `pool` (this process's shared worker builds its own)."""
        return [client for client in built if client.connection_pool is pool]

    monkeypatch.setattr(redis.Redis, "__init__", counting_init)
    with app.connection_for_write() as connection:
        channel = connection.default_channel
        # When it publishes five times on one channel
        for index in range(5):
            app.send_task("test.noop", args=[index], connection=connection)
        # Then one client was built on its pool for them, and every message is in the queue
        first_pool = channel.pool
        assert len(on(first_pool)) == 1
        assert probe.llen(queue) == 5
        # And once the channel drops its pool (as a prefork child does after the fork, and a
        # close), the next publish builds a client on the new pool and still arrives
        channel._after_fork()
        app.send_task("test.noop", args=[5], connection=connection)
        assert channel.pool is not first_pool and len(on(channel.pool)) == 1
    assert probe.llen(queue) == 6
