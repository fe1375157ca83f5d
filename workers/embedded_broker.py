"""kombu's filesystem transport, made safe to consume while another process publishes.

kombu writes a message file in place, so a consumer can move and read it half-written
(seen: an empty file, a JSONDecodeError, and the worker stopped as "unrecoverable"). Here
each message is written under a name the consumer ignores, then renamed into place:
rename is atomic, so a consumer sees a whole message or none. Binding tables have the
same race when first created; reads of them retry. A drain waits one poll at most, so a
worker stops within a poll.
"""

from __future__ import annotations

import os
import time
import uuid
from time import monotonic
from typing import Any

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

    def drain_events(self, connection: Any, timeout: float | None = None) -> Any:  # type: ignore[override]
        # Celery's loop for a polling transport drains with a 2 s timeout and looks for a
        # stop only between drains, then drains once more on its way out: a worker took
        # about 4 s to stop (every `escalate serve` shutdown, every test worker). Coming
        # back after one poll costs a loop turn per poll and lets it stop within one.
        interval = self.polling_interval
        if timeout is not None and interval:
            timeout = min(timeout, interval)
        return super().drain_events(connection, timeout=timeout)  # type: ignore[no-untyped-call]
