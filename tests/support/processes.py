"""Stopping a test's own processes, so that nothing is left running after a test."""

from __future__ import annotations

import signal
import subprocess
from typing import Any


def stop(process: subprocess.Popen[Any], *, grace: float = 20) -> None:
    """SIGTERM, then SIGKILL once `grace` seconds pass; with no grace, SIGKILL at once (an
    agent's idle worker whose output the test has read: a cold Celery stop costs seconds)."""
    if process.poll() is not None:
        return
    if grace > 0:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            pass
    process.kill()
    process.wait()
