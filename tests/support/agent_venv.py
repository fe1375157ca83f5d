"""The agent's side of the boundary: a venv with only celery, and its worker processes."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from tests.support.waiting import wait_until

AGENT_WORKER = Path(__file__).resolve().parent / "agent_worker.py"
# The versions we pin, so the agent runs the Celery our README names.
CELERY_ONLY = (
    f"celery[redis]=={version('celery')}",
    f"kombu=={version('kombu')}",
    f"redis=={version('redis')}",
)


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without our settings or our code on the path."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("ESCALATE_", "PYTHON", "VIRTUAL_ENV"))
    }
    return {**env, **extra}


def cached_celery_only_venv(cache: Path) -> Path:
    """One celery-only venv per pinned version set, built once and shared by every pytest
    process (xdist workers included): building it costs ~20 s, a lock makes the others wait."""
    key = hashlib.sha256(" ".join(CELERY_ONLY).encode()).hexdigest()[:12]
    folder = cache / f"celery-only-{key}"
    python = folder / "bin" / "python"
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / f"celery-only-{key}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".complete").exists():
            shutil.rmtree(folder, ignore_errors=True)
            make_celery_only_venv(folder)
            (folder / ".complete").touch()
    return python


def make_celery_only_venv(folder: Path) -> Path:
    """`python -m venv` plus `pip install celery[redis]==ours` from the index pip uses here;
    returns its python, checked unable to import this project."""
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, timeout=120)
    python = folder / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *CELERY_ONLY],
        check=True,
        timeout=600,
        env=clean_env(),
    )
    probe = subprocess.run(
        [str(python), "-c", "import celery, workers"],
        cwd=folder,
        env=clean_env(),
        capture_output=True,
        timeout=60,
    )
    assert probe.returncode != 0 and b"No module named 'workers'" in probe.stderr, probe
    return python


@dataclass
class AgentWorker:
    """One agent worker process on its own queue; `wakes()` is what it received."""

    process: subprocess.Popen[bytes]
    folder: Path
    queue: str
    task: str

    @property
    def wake_spec(self) -> dict[str, str]:
        """What the run names at intake so that its wake-up reaches this worker."""
        return {"task": self.task, "queue": self.queue}

    def wakes(self) -> list[dict[str, Any]]:
        path = self.folder / "wakes.jsonl"
        if not path.exists():
            return []
        lines = path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def wait_for_wakes(self, count: int, timeout: float = 30) -> list[dict[str, Any]]:
        """The payloads once `count` wakes arrived (fails on fewer in time)."""
        got = wait_until(
            self.wakes, lambda got: len(got) >= count, timeout=timeout, what=f"{count} wake(s)"
        )
        return [item["wake"] for item in got]

    def log(self) -> str:
        return (self.folder / "worker.log").read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        """Kill it: the test has read its wakes, and even a cold Celery shutdown of an idle
        worker takes over 2 s (4 s under the suite's load), for each of dozens of tests."""
        self.process.kill()
        self.process.wait()


def start_agent_worker(
    python: Path,
    folder: Path,
    *,
    broker_url: str,
    queue: str,
    task: str = "agent.wake",
    broker_options: dict[str, Any] | None = None,
) -> AgentWorker:
    """Start the agent's worker from a folder holding only its module (nothing of ours)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(AGENT_WORKER, folder / "agent_worker.py")
    env = clean_env(
        AGENT_BROKER_URL=broker_url,
        AGENT_BROKER_OPTIONS=json.dumps(broker_options or {}),
        AGENT_QUEUE=queue,
        AGENT_WAKE_TASK=task,
        AGENT_WAKES=str(folder / "wakes.jsonl"),
    )
    with (folder / "worker.log").open("wb") as log:
        process = subprocess.Popen(
            [
                str(python),
                "-m",
                "celery",
                "-A",
                "agent_worker",
                "worker",
                "-Q",
                queue,
                "--pool",
                "solo",
                "--without-mingle",
                "--without-gossip",
                "--without-heartbeat",
                "--loglevel",
                "warning",
            ],
            cwd=folder,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    return AgentWorker(process, folder, queue, task)
