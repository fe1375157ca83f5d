"""One Celery worker per test process and broker, lent to one live test at a time.

A test's settings (database, design, channels, outbound rules) reach our tasks through the
app's `escalation_settings` (workers/runtime.py), so lending the worker is binding its app
to the test's settings and consuming the test's own queue. Given back, the worker stops
consuming that queue, finishes what it already took, drops what it holds for later and
forgets the queue: nothing of one test runs in the next.

One set per process (the `shared_workers` fixture of tests/conftest.py): a worker on
Redis runs kombu's event loop, which is one per process, and a second such worker would
take the first one's loop as its own.
"""

from __future__ import annotations

import contextlib
import functools
import secrets
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from celery import Celery, bootsteps
from celery.app.trace import setup_worker_optimizations
from celery.contrib.testing.worker import start_worker
from celery.worker import state

from models.settings import Settings
from tests.support.waiting import wait_until
from workers.app import make_celery
from workers.runtime import runtime_for

Wake = Callable[[dict[str, Any]], None]

# A stopping worker waits out its pending BRPOP (1 s by default), and a queue it starts to
# consume waits for the one under way: 0.1 s, for 10 BRPOPs a second.
REDIS_POLLING = 0.1
NUDGE = "test.nudge"


def held_ids() -> set[str]:
    """Ids of the tasks the process's workers hold for later (taken with a countdown)."""
    while True:
        try:  # a worker's timer thread may drop one meanwhile
            return {request.id for request in state.scheduled_requests}
        except RuntimeError:  # "Set changed size during iteration": look again
            continue


def stacks() -> str:
    """Where every other thread of this process is now."""
    return "\n".join(
        "".join(traceback.format_stack(frame))
        for thread, frame in sys._current_frames().items()
        if thread != threading.get_ident()
    )


class SharedWorker:
    """A threads-pool worker on one broker, its app bound to whichever test holds it."""

    def __init__(self, idle: Settings) -> None:
        self.idle = idle
        self.app = make_celery(idle)
        if not idle.embedded_broker:
            options = self.app.conf.broker_transport_options
            self.app.conf.broker_transport_options = {**options, "polling_interval": REDIS_POLLING}
        self.on_wake: Wake | None = None

        # One `test.woken` for the session, handing each wake to the test holding the loan.
        @self.app.task(name="test.woken", shared=False)
        def wake(wake: dict[str, Any]) -> None:
            if self.on_wake is not None:
                self.on_wake(wake)

        @self.app.task(name=NUDGE, shared=False)
        def nudge() -> None:
            """Nothing: its message wakes the consumer."""

        self._running: AbstractContextManager[Any] = start_worker(
            self.app,
            pool="threads",
            concurrency=4,
            perform_ping_check=False,
            shutdown_timeout=30,
            queues=[idle.queue],
        )
        self.worker = self._running.__enter__()

    def _in_consumer(self, operation: Callable[[], object]) -> None:
        """Run `operation` in the worker's consumer thread, as its remote-control commands
        do (the consumer's own queues are not for other threads), and wait for it."""
        done = threading.Event()
        failed: list[BaseException] = []

        def run() -> None:
            try:
                operation()
            except BaseException as exc:  # handed to the waiting test
                failed.append(exc)
            finally:
                done.set()

        self.worker.consumer.call_soon(run)
        if self.idle.embedded_broker:
            # Celery's loop for a transport without an event loop drains for up to 2 s
            # before it runs what was handed to it: a message ends the drain.
            self.app.send_task(NUDGE, queue=self.idle.queue)
        assert done.wait(timeout=10), "the shared worker's consumer is stuck:\n" + stacks()
        if failed:
            raise failed[0]

    @contextlib.contextmanager
    def lent(self, settings: Settings, on_wake: Wake) -> Iterator[Celery]:
        """The worker running `settings` on `settings.queue` for the block's length."""
        assert settings.resolved_broker_url == self.idle.resolved_broker_url
        assert settings.embedded_broker is False or (
            settings.broker_folder == self.idle.broker_folder
        ), "link the test's broker folder to the shared one first (link_broker)"
        # An in-thread worker finds its tasks through the process's default app, which is
        # whichever worker started last ("only a single app can be used for workers running
        # in the same process"): have this one look its tasks up in its own app, as `celery
        # worker` does at its start, before it runs anything of this test.
        setup_worker_optimizations(self.app, self.worker.hostname)
        self.app.escalation_settings = settings  # type: ignore[attr-defined]
        self.app.conf.task_default_queue = settings.queue  # where our tasks enqueue the next
        self.on_wake = on_wake
        try:
            consumer = self.worker.consumer
            self._in_consumer(lambda: consumer.add_task_queue(settings.queue))
            yield self.app
        finally:
            try:
                self._give_back(settings)
            finally:  # a failed give-back hands nothing of this test to the next
                self.app.escalation_settings = self.idle  # type: ignore[attr-defined]
                self.app.conf.task_default_queue = self.idle.queue
                self.on_wake = None

    def _give_back(self, settings: Settings) -> None:
        consumer = self.worker.consumer
        self._in_consumer(lambda: consumer.cancel_task_queue(settings.queue))
        held = held_ids()
        if held:  # taken with a countdown still to run: revoked, then acked when it falls due
            self._in_consumer(lambda: state.revoked.update(held))

        def settled() -> bool:
            return not state.active_requests and not state.reserved_requests

        wait_until(settled, timeout=30, every=0.02, what="the shared worker's tasks finished")
        with self.app.connection_for_write() as connection:
            connection.default_channel.queue_purge(settings.queue)
        runtime = runtime_for(self.app)
        if "engine" in runtime.__dict__:  # built on first use (cached_property)
            runtime.engine.dispose()

    @property
    def running(self) -> bool:
        return bool(self.worker.blueprint.state == bootsteps.RUN)

    def stop(self) -> None:
        try:
            self._running.__exit__(None, None, None)
        except RuntimeError as exc:  # still running: say where it is stuck
            raise RuntimeError(f"{exc}\n{stacks()}") from exc


class SharedWorkers:
    """The test process's shared workers, one per broker, started on first use."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.by_broker: dict[str, SharedWorker] = {}
        self.stopped: list[SharedWorker] = []  # joined at the end

    @functools.cached_property
    def broker_folder(self) -> Path:
        """The folder broker every embedded test's home links to."""
        return self._idle(None).broker_folder

    def _idle(self, broker_url: str | None) -> Settings:
        return Settings(
            home=self.home,
            broker_url=broker_url,
            database_url=f"sqlite:///{self.home / 'idle.db'}",
            queue=f"idle-{secrets.token_hex(4)}",
        )

    def link_broker(self, settings: Settings) -> None:
        """Point an embedded test's broker folder at the shared one (before anything makes it)."""
        if not settings.embedded_broker:
            return
        link = settings.home / "broker"
        if not link.is_symlink():
            settings.home.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.broker_folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            link.symlink_to(self.broker_folder, target_is_directory=True)

    def for_settings(self, settings: Settings) -> SharedWorker:
        key = settings.resolved_broker_url
        worker = self.by_broker.get(key)
        if worker is None or not worker.running:
            # Celery's stop flag is one per process: a test that stops a worker of its own
            # (tests/workers/test_embedded_broker.py) stops these too. Start another.
            if worker is not None:
                # Its steps close after it leaves RUN, its event loop last: a Redis worker
                # started before then would take that loop as its own (one per process).
                stopped = worker.worker.blueprint.shutdown_complete.wait(timeout=30)
                assert stopped, "a stopped shared worker did not finish:\n" + stacks()
                self.stopped.append(worker)
            worker = self.by_broker[key] = SharedWorker(self._idle(settings.broker_url))
        return worker

    def stop(self) -> None:
        # Celery's stop flag is one per process and each stop lowers it again once its own
        # worker is gone: raised for all first, the running ones stop together while the
        # first is joined; the ones stopped earlier are only joined.
        state.should_terminate = 0
        for worker in [*self.by_broker.values(), *self.stopped]:
            worker.stop()
