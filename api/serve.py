"""`escalate serve`: API, worker and beat as child processes on the embedded defaults."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from types import FrameType

from models.settings import Settings

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    # A `kill -9` of serve must not leave an orphan worker or beat running beside the restart.
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def commands(settings: Settings) -> dict[str, list[str]]:
    """The child processes and their command lines."""
    python = sys.executable
    home = settings.home.resolve()
    celery = [python, "-m", "celery", "-A", "workers.celery_app"]
    quiet = ["--loglevel", "warning"]
    return {
        "api": [
            python,
            "-m",
            "uvicorn",
            "--factory",
            "api.app:app_from_env",
            "--host",
            settings.host,
            "--port",
            str(settings.port),
            "--log-level",
            "warning",
            "--no-proxy-headers",  # the caller's address is ours to read (trusted_proxies)
        ],
        "worker": [
            *celery,
            "worker",
            "--pool",
            "threads",
            "--concurrency",
            "4",
            "--without-mingle",
            "--without-gossip",
            "--without-heartbeat",
            *quiet,
        ],
        # Beat as its own child, not `worker --beat`: that forks beat into a grandchild which
        # a kill -9 of serve left running (seen in tests/api/test_serve.py).
        "beat": [*celery, "beat", "--schedule", str(home / "celerybeat-schedule"), *quiet],
    }


def child_env(settings: Settings) -> dict[str, str]:
    env = dict(os.environ)
    env["ESCALATE_HOME"] = str(settings.home.resolve())
    env["ESCALATE_HOST"], env["ESCALATE_PORT"] = settings.host, str(settings.port)
    return env


def supervise(settings: Settings, *, announce: Callable[[str], None]) -> int:
    """Run the children until one exits or we are told to stop; then stop them all."""
    env = child_env(settings)
    children = {
        name: subprocess.Popen(argv, env=env, preexec_fn=_die_with_parent)
        for name, argv in commands(settings).items()
    }
    stopping = False

    def stop(_signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    code = 0
    try:
        while not stopping:
            for name, child in children.items():
                if child.poll() is not None:
                    announce(f"{name} exited with code {child.returncode}; stopping")
                    code = child.returncode or 1
                    stopping = True
            time.sleep(0.3)
    finally:
        for child in children.values():
            if child.poll() is None:
                child.terminate()
        for child in children.values():
            try:
                child.wait(timeout=15)
            except subprocess.TimeoutExpired:
                child.kill()
    return code
