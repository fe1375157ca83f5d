"""The one poll-with-deadline helper: returns what held, or fails saying what it waited for."""

from __future__ import annotations

import itertools
import threading
import time

import pytest

from tests.support.waiting import wait_until


def test_it_returns_the_first_value_that_holds() -> None:
    # Given a probe that counts up
    counter = itertools.count()
    # When waiting for it to reach 3 / Then that value comes back
    assert wait_until(lambda: next(counter), lambda n: n >= 3, timeout=5, what="3", every=0) == 3


def test_it_fails_after_the_timeout_naming_what_and_the_last_value() -> None:
    # Given a probe that never holds
    started = time.monotonic()
    # When waiting / Then it fails once the timeout is up, with the wait and the last value named
    with pytest.raises(AssertionError, match=r"waiting for the door; last saw 'shut'"):
        wait_until(lambda: "shut", lambda v: v == "open", timeout=0.2, what="the door")
    assert time.monotonic() - started >= 0.2


def test_with_a_condition_it_wakes_on_notify_rather_than_polling() -> None:
    # Given a value changed under a condition by another thread
    changed = threading.Condition()
    box: list[str] = []

    def later() -> None:
        time.sleep(0.1)
        with changed:
            box.append("ready")
            changed.notify_all()

    threading.Thread(target=later, daemon=True).start()
    # When waiting with a polling interval far longer than the change takes
    started = time.monotonic()
    got = wait_until(lambda: list(box), timeout=5, what="ready", every=60, changed=changed)
    # Then it returns soon after the notify
    assert got == ["ready"] and time.monotonic() - started < 2
