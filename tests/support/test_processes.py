"""Stopping a test's process leaves none of its children running."""

from __future__ import annotations

import subprocess
import sys
import time

from tests.support.processes import descendants, proc_stat, stop

# A parent and its child, both deaf to SIGTERM (a worker whose warm stop outlasts its grace)
DEAF_PAIR = """
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = os.fork()
if child == 0:
    time.sleep(120)
    sys.exit(0)
print(child, flush=True)
time.sleep(120)
"""


def running(pid: int) -> bool:
    """Alive and not a zombie waiting for init to reap it."""
    try:
        state = proc_stat(pid)[0]
    except OSError:
        return False
    return state != "Z"


def test_a_process_killed_after_its_grace_takes_its_children_with_it() -> None:
    # Given a process whose child, like the process itself, ignores SIGTERM
    parent = subprocess.Popen([sys.executable, "-c", DEAF_PAIR], stdout=subprocess.PIPE)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    assert descendants(parent.pid) == [child]
    # When it is stopped and outlasts its grace
    stop(parent, grace=0.2)
    # Then neither runs on
    deadline = time.monotonic() + 5
    while running(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert parent.returncode is not None and not running(child)
