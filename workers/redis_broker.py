"""kombu's Redis transport, made to survive losing Redis while a task is in flight.

Celery 5.7 handles a lost broker connection by collecting the connection (which closes the
transport and forgets its settings) and then closing it. When the consumer's channel was
waiting on BRPOP at the loss, the collect's close fails part way and leaves the channel
open; the second close then tries to put the worker's unacknowledged messages back, needs a
new Redis client, reads the forgotten settings and raises AttributeError. Celery reads that
as unrecoverable and the worker exits: a Redis restart with one `acks_late` task running
stopped every worker it hit (reproduced with celery 5.7.0 and kombu 5.7.0, a prefork worker
and a plain task; docs/RELIABILITY.md).

Here a channel whose transport is already gone says so with a connection error, which
kombu ignores while closing, so Celery goes on to reconnect. The messages it could not put
back stay in Redis's unacked index and return after the visibility timeout, and SQL (the
truth) re-drives their cases well before that.

A channel also keeps the one Redis client it sends its commands with (publishes, acks, the
rest; the consumer's BRPOP has its own). kombu built a new client for every command, and
building one (its 170 response callbacks) was a fifth of `send_task`'s CPU. A client holds
no connection of its own: its pool, locked and checked for forks, does.
"""

from __future__ import annotations

from typing import Any

from kombu.transport import redis
from redis.exceptions import ConnectionError as RedisConnectionError


class Channel(redis.Channel):  # type: ignore[misc]
    _command_client: Any = None

    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        if self.connection.client is None:
            raise RedisConnectionError("the broker connection was already closed")
        params: dict[str, Any] = super()._connparams(asynchronous=asynchronous)  # type: ignore[no-untyped-call]
        return params

    def _create_client(self, asynchronous: bool = False) -> Any:
        if asynchronous:  # the consumer's BRPOP client: kombu keeps it already
            return super()._create_client(asynchronous=True)  # type: ignore[no-untyped-call]
        kept = self._command_client
        # Closing the channel, or a fork, drops its pool: a new pool, a new client
        if kept is None or kept.connection_pool is not self.pool:
            kept = self._command_client = super()._create_client()  # type: ignore[no-untyped-call]
        return kept


class Transport(redis.Transport):  # type: ignore[misc]
    Channel = Channel
