"""A test's own processes: their environment from settings, and stopping them so that nothing
is left running after a test."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path
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
    agent's idle worker whose output the test has read: a cold Celery stop costs seconds).
    A SIGKILL takes the process's children with it: a prefork worker's pool child outlived
    its killed parent by an hour once, reparented to init."""
    if process.poll() is not None:
        return
    if grace > 0:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            pass
    stragglers = descendants(process.pid)
    process.kill()
    process.wait()
    for pid in stragglers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def proc_stat(pid: int | str) -> list[str]:
    """The fields of /proc/PID/stat after the command (Linux): state first, then the parent.
    The command may itself hold spaces and ")"; raises OSError for a process gone."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, read from /proc (Linux)."""
    parent_of: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):  # gone meanwhile
                parent_of[int(entry.name)] = int(proc_stat(entry.name)[1])
    found: list[int] = []
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parent_of.items() if parent in frontier}
        found += sorted(frontier)
    return found
