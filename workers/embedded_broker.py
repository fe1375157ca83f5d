"""kombu's filesystem transport, made safe to consume while another process publishes.

kombu writes a message file in place, so a consumer can move and read it half-written
(seen: an empty file, a JSONDecodeError, and the worker stopped as "unrecoverable"). Here
each message is written under a name the consumer ignores, then renamed into place:
rename is atomic, so a consumer sees a whole message or none. Binding tables have the
same race when first created; reads of them retry. A drain gives up within a poll once the
worker is stopping, so a stop takes a poll rather than Celery's 2 s drains.
"""

from __future__ import annotations

import os
import time
import uuid
from time import monotonic
from typing import Any

from celery.worker import state
from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


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


class Transport(filesystem.Transport):  # type: ignore[misc]
    Channel = Channel
    # A folder has no host: kombu's default 'localhost' only made every start warn
    # "No hostname was supplied".
    default_connection_params: dict[str, Any] = {}  # noqa: RUF012

    def drain_events(self, connection: Any, timeout: float | None = None) -> Any:  # type: ignore[override]
        # Celery's loop for a polling transport drains with a 2 s timeout and looks for a
        # stop only between drains, then drains once more on its way out: a worker took
        # about 4 s to stop (every `escalate serve` shutdown, every test worker). Drain in
        # slices of one poll and give up early once the worker is stopping; anyone else
        # (a control reply, say) still waits the whole timeout.
        drain: Any = super().drain_events
        interval = self.polling_interval
        if timeout is None or not interval:
            return drain(connection, timeout=timeout)
        ends = monotonic() + timeout
        while True:
            left = ends - monotonic()
            try:
                return drain(connection, timeout=max(min(interval, left), 0))
            except TimeoutError:  # what kombu's socket.timeout is
                if left <= interval or _worker_stopping():
                    raise


def _worker_stopping() -> bool:
    """Whether this process's Celery worker has been told to stop (as `maybe_shutdown` reads)."""
    return any(
        flag is not None and flag is not False
        for flag in (state.should_stop, state.should_terminate)
    )
