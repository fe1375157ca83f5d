"""Starting the run's agent (tests/chaos/agent_side.py) from a celery-only venv."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.agent_venv import clean_env
from tests.support.processes import stop

AGENT_SIDE = Path(__file__).resolve().parent / "agent_side.py"
WAKE_TASK = "chaos.wake"


@dataclass
class Agent:
    """The agent's worker; `wakes()` lists what it received, `acks()` what it acknowledged."""

    process: subprocess.Popen[bytes]
    folder: Path
    queue: str

    @property
    def wake_spec(self) -> dict[str, str]:
        return {"task": WAKE_TASK, "queue": self.queue}

    def lines(self) -> list[dict[str, Any]]:
        path = self.folder / "wakes.jsonl"
        if not path.exists():
            return []
        text = path.read_text(encoding="utf-8")
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def wakes(self) -> list[dict[str, Any]]:
        return [line["wake"] for line in self.lines() if "wake" in line]

    def log(self) -> str:
        return (self.folder / "agent.log").read_text(errors="replace")

    def stop(self) -> None:
        stop(self.process)


def start_agent(python: Path, folder: Path, *, broker_url: str) -> Agent:
    """The agent's worker, run from a folder holding only its module (nothing of ours)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(AGENT_SIDE, folder / "agent_side.py")
    queue = f"agent-{folder.parent.name[-8:]}"
    env = clean_env(
        AGENT_BROKER_URL=broker_url,
        AGENT_QUEUE=queue,
        AGENT_WAKE_TASK=WAKE_TASK,
        AGENT_WAKES=str(folder / "wakes.jsonl"),
    )
    command = [str(python), "-m", "celery", "-A", "agent_side", "worker", "-Q", queue]
    command += ["--pool", "threads", "--concurrency", "8", "--without-mingle"]
    command += ["--without-gossip", "--without-heartbeat", "--loglevel", "warning"]
    with (folder / "agent.log").open("wb") as log:
        process = subprocess.Popen(
            command, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    return Agent(process, folder, queue)
