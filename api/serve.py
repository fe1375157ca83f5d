"""`escalate serve`: API, worker and beat as child processes on the embedded defaults."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from models.settings import Settings

if TYPE_CHECKING:
    import httpx

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    # A `kill -9` of serve must not leave an orphan worker or beat running beside the restart.
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def commands(settings: Settings) -> dict[str, list[str]]:
    """The child processes and their command lines."""
    python = sys.executable
    home = settings.home.resolve()
    # --quiet: no banner, so the first start shows our lines, not the workers' ASCII art
    celery = [python, "-m", "celery", "--quiet"]
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
            "-A",
            "workers.celery_app",
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
        "beat": [
            *celery,
            *("-A", "workers.beat_app", "beat"),
            *("--schedule", str(home / "celerybeat-schedule")),
            *quiet,
        ],
    }


def child_env(settings: Settings) -> dict[str, str]:
    env = dict(os.environ)
    env["ESCALATE_HOME"] = str(settings.home.resolve())
    env["ESCALATE_HOST"], env["ESCALATE_PORT"] = settings.host, str(settings.port)
    return env


LOCK_FILE = "serve.lock"


def claim(settings: Settings) -> int | str:
    """This home and port for one serve: the lock's descriptor (held until exit, released by
    the kernel even on kill -9), or why not, naming the serve that has them. Nothing is
    created until both are free."""
    from models.state_files import private_folder

    lock = settings.home.resolve() / LOCK_FILE
    url = f"http://{settings.host}:{settings.port}"
    fd = _locked(lock) if lock.exists() else None
    if isinstance(fd, str):
        return fd
    with socket.socket() as probe:
        # As uvicorn binds: a restart must not trip over the last run's TIME_WAIT sockets.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((settings.host, settings.port))
        except OSError as exc:
            if fd is not None:
                os.close(fd)
            if exc.errno != errno.EADDRINUSE:
                return f"cannot listen on {url}: {exc.strerror}"
            return f"{url} is taken: {_who_answers(url)}; stop it, or set ESCALATE_PORT"
    if fd is None:
        private_folder(lock.parent)
        fd = _locked(lock)
        if isinstance(fd, str):
            return fd
    os.ftruncate(fd, 0)
    os.write(fd, f"pid {os.getpid()} at {url}\n".encode())
    return fd


def _locked(lock: Path) -> int | str:
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = lock.read_text(encoding="utf-8").strip() or "another serve"
        os.close(fd)
        return (
            f"{lock.parent} is already served: {holder}; stop it first, or use another "
            "ESCALATE_HOME"
        )
    return fd


def _health(url: str, timeout: float) -> httpx.Response:
    """GET our own /healthz. Plain HTTP on this machine: no proxy from the environment, and
    no certificates to load (which costs every new httpx client about 20 ms of CPU)."""
    import httpx

    with httpx.Client(trust_env=False, verify=False, timeout=timeout) as client:
        return client.get(f"{url}/healthz")


def _who_answers(url: str) -> str:
    import httpx

    try:
        health = _health(url, timeout=2).json()
        return f"an escalate serve answers there (design {health['design']})"
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return "another program listens there"


def answers(url: str, timeout: float = 1) -> bool:
    """Whether our /healthz at `url` answers 200 within `timeout` seconds."""
    import httpx

    try:
        return _health(url, timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


def supervise(
    settings: Settings,
    *,
    announce: Callable[[str], None],
    ready: Callable[[], None] = lambda: None,
) -> int:
    """Run the children until one exits or we are told to stop; then stop them all.
    `ready` runs once, when the API first answers /healthz."""
    env = child_env(settings)
    children = {
        name: subprocess.Popen(argv, env=env, preexec_fn=die_with_parent)
        for name, argv in commands(settings).items()
    }
    stopping = False

    def stop(_signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    code = 0
    url = f"http://{settings.host}:{settings.port}"
    answered = False
    try:
        while not stopping:
            if not answered and children["api"].poll() is None and answers(url):
                answered = True
                ready()
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
