"""Waiting for what a live service does: poll a probe until it holds, or fail saying what."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    probe: Callable[[], T],
    until: Callable[[T], object] = bool,
    *,
    timeout: float,
    what: str,
    every: float = 0.05,
    changed: threading.Condition | None = None,
) -> T:
    """Return `probe()` once `until` holds for it; fail after `timeout` naming `what`.

    With `changed`, probes hold that condition and wait for its next notify instead of
    sleeping `every` seconds.
    """
    deadline = time.monotonic() + timeout
    with changed if changed is not None else contextlib.nullcontext():
        while True:
            value = probe()
            if until(value):
                return value
            left = deadline - time.monotonic()
            if left <= 0:
                last = repr(value)
                last = last if len(last) <= 1000 else f"{last[:1000]}…"
                raise AssertionError(
                    f"timed out after {timeout:g}s waiting for {what}; last saw {last}"
                )
            if changed is not None:
                changed.wait(left)
            else:
                time.sleep(min(every, left))
