"""A test's own processes: their environment from settings, and stopping them so that nothing
is left running after a test."""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any

from models.settings import Settings


def settings_env(settings: Settings) -> dict[str, str]:
    """This process's environment with `settings` as the only ESCALATE_ variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESCALATE_")}
    for name, value in settings.model_dump(exclude_none=True).items():
        env[f"ESCALATE_{name.upper()}"] = str(value)
    return env


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
