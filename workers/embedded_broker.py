"""kombu's filesystem transport, made safe to consume while another process publishes.

kombu writes a message file in place, so a consumer can move and read it half-written
(seen: an empty file, a JSONDecodeError, and the worker stopped as "unrecoverable"). Here
each message is written under a name the consumer ignores, then renamed into place:
rename is atomic, so a consumer sees a whole message or none. Binding tables have the
same race when first created; reads of them retry. A drain gives up within a poll once the
worker is stopping, so a stop takes a poll rather than Celery's 2 s drains. A waiting
consumer is woken when a message lands in its folder (inotify, on Linux) or a task settles
its message (a prefetch slot frees up), so it takes the message at once rather than at its
next poll: the poll is only the fallback.
"""

from __future__ import annotations

import logging
import os
import selectors
import threading
import time
import uuid
from contextlib import suppress
from queue import Empty
from time import monotonic
from typing import Any

from celery.worker import state
from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps

try:  # Linux only (pyproject installs it there); elsewhere the poll is all there is
    from inotify_simple import INotify, flags
except ImportError:  # pragma: no cover
    INotify = None

log = logging.getLogger(__name__)


class Channel(filesystem.Channel):  # type: ignore[misc]
    def _put(self, queue: Any, payload: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = os.path.join(self.data_folder_out, f".{name}.partial")  # not a queue's name
        try:
            with open(partial, "wb") as handle:
                handle.write(str_to_bytes(dumps(payload)))  # type: ignore[no-untyped-call]
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc

    def basic_ack(self, delivery_tag: Any, multiple: bool = False) -> None:
        super().basic_ack(delivery_tag, multiple=multiple)  # type: ignore[no-untyped-call]
        self._settled()

    def basic_reject(self, delivery_tag: Any, requeue: bool = False) -> None:
        super().basic_reject(delivery_tag, requeue=requeue)  # type: ignore[no-untyped-call]
        self._settled()

    def _settled(self) -> None:
        transport = self.connection  # None once the channel is closed
        if transport is not None:
            transport.settled()

    def get_table(self, exchange: Any) -> Any:
        # kombu creates a binding table by opening it empty and then locking it, so a
        # reader in between sees an empty file (seen: JSONDecodeError on publish). The
        # writer finishes within moments: read again.
        for _ in range(50):
            try:
                return super().get_table(exchange)  # type: ignore[no-untyped-call]
            except ValueError:
                time.sleep(0.01)
        return super().get_table(exchange)  # type: ignore[no-untyped-call]


class Arrivals:
    """A consumer's wait between polls, cut short when a message lands in its folder or a
    prefetch slot frees up (a delivered message settled, in another thread)."""

    def __init__(self, folder: str) -> None:
        self._selector = selectors.DefaultSelector()
        self._lock = threading.Lock()  # a wake from a task's thread never writes a closed fd
        self._wake_read, self._wake_write = os.pipe()
        for end in (self._wake_read, self._wake_write):
            os.set_blocking(end, False)
        self._selector.register(self._wake_read, selectors.EVENT_READ)
        self._watch = _watch(folder)
        if self._watch is not None:
            self._selector.register(self._watch.fileno(), selectors.EVENT_READ)

    def wake(self) -> None:
        """End the current or next wait at once (from any thread)."""
        with self._lock, suppress(OSError):  # a full pipe: woken already; closed: none waits
            if self._wake_write >= 0:
                os.write(self._wake_write, b"\0")

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True as soon as a message arrives or a slot frees up (or
        either has since the last wait)."""
        ends = monotonic() + seconds
        while (left := ends - monotonic()) > 0:
            for key, _ in self._selector.select(left):
                if key.fd == self._wake_read:
                    with suppress(BlockingIOError):
                        os.read(self._wake_read, 4096)
                    return True
                # A hidden name is a message still being written (Channel._put): not yet
                # takeable, so that event alone does not end the wait.
                if any(not event.name.startswith(".") for event in self._watch.read(timeout=0)):
                    return True
        return False

    def close(self) -> None:
        with self._lock:
            self._selector.close()
            if self._watch is not None:
                self._watch.close()
            os.close(self._wake_read)
            os.close(self._wake_write)
            self._wake_write = -1


def _watch(folder: str) -> Any:
    """An inotify watch for message files landing in `folder`, or None: poll only."""
    if INotify is None:
        return None
    watch = None
    try:
        watch = INotify()
        # Our publishers rename a whole file in (MOVED_TO); kombu's own write in place (an
        # agent with plain kombu, say) ends with CLOSE_WRITE.
        watch.add_watch(folder, flags.MOVED_TO | flags.CLOSE_WRITE)
    except OSError as exc:  # the user's inotify instances used up, say: the poll still works
        if watch is not None:
            watch.close()
        log.warning("not watching %s for messages (%s): polling only", folder, exc)
        return None
    return watch


class Transport(filesystem.Transport):  # type: ignore[misc]
    Channel = Channel
    # A folder has no host: kombu's default 'localhost' only made every start warn
    # "No hostname was supplied".
    default_connection_params: dict[str, Any] = {}  # noqa: RUF012

    def __init__(self, client: Any, **kwargs: Any) -> None:
        super().__init__(client, **kwargs)  # type: ignore[no-untyped-call]
        self._folder: str = client.transport_options.get("data_folder_in", "data_in")
        self._arrivals: Arrivals | None = None  # opened by the first drain: publishers need none

    def drain_events(self, connection: Any, timeout: float | None = None) -> Any:  # type: ignore[override]
        # kombu's loop sleeps a whole poll between looks, so a message waited up to 0.1 s
        # for each broker hop (the reply → wake time, docs/PERFORMANCE.md §4): here the wait
        # ends when a message lands. Celery's loop drains with a 2 s timeout and looks for a
        # stop only between drains, then drains once more on its way out: a worker took about
        # 4 s to stop. So a drain gives up early once the worker is stopping; anyone else (a
        # control reply, say) still waits the whole timeout.
        interval = self.polling_interval
        if timeout is None or not interval:
            return super().drain_events(connection, timeout=timeout)  # type: ignore[no-untyped-call]
        if self._arrivals is None:
            self._arrivals = Arrivals(self._folder)
        ends = monotonic() + timeout
        cycle: Any = self.cycle
        while True:
            try:
                return cycle.get(self._deliver, timeout=timeout)
            except Empty:
                pass
            left = ends - monotonic()
            if left <= 0 or _worker_stopping():
                raise TimeoutError  # what kombu's socket.timeout is
            self._arrivals.wait(min(interval, left))

    def settled(self) -> None:
        """A delivered message was acked or rejected: with the prefetch full, a drain waiting
        for a slot takes the next message now rather than at its next poll."""
        arrivals = self._arrivals
        if arrivals is not None:
            arrivals.wake()

    def close_connection(self, connection: Any) -> None:
        super().close_connection(connection)  # type: ignore[no-untyped-call]
        if self._arrivals is not None:
            self._arrivals.close()
            self._arrivals = None


def _worker_stopping() -> bool:
    """Whether this process's Celery worker has been told to stop (as `maybe_shutdown` reads)."""
    return any(
        flag is not None and flag is not False
        for flag in (state.should_stop, state.should_terminate)
    )
