"""The service as deployed, as real processes a chaos run can kill: its own Redis (append-only
file, spare port), its own PostgreSQL cluster, N prefork workers, two beats, the API under
uvicorn, a switchable HTTP sink and the run's own agent (a celery-only venv)."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from api.serve import answers
from models.migrate import upgrade
from models.settings import Settings
from tests.chaos.agent import Agent, start_agent
from tests.chaos.sink import ChaosSink
from tests.chaos.sizes import SIZES
from tests.support.postgres_server import PostgresServer, own_postgres
from tests.support.processes import settings_env
from tests.support.waiting import wait_until
from tests.workers.conftest import write_apprise_config

REPO = Path(__file__).resolve().parents[2]
DESIGN = Path(__file__).resolve().parent / "design-chaos.yaml"
TAGS = ("ops", "ops-low", "oncall", "pager")
AGENT_TOKEN = "chaos-agent-" + "a1" * 12
OPERATOR_TOKEN = "chaos-operator-" + "b2" * 12


def spare_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Process:
    """One child process with its own log; `kill()` is SIGKILL, `stop()` a clean stop."""

    name: str
    command: list[str]
    env: dict[str, str]
    log: Path
    popen: subprocess.Popen[bytes] | None = None

    def start(self) -> Process:
        with self.log.open("ab") as output:
            self.popen = subprocess.Popen(
                self.command,
                env=self.env,
                cwd=REPO,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a kill of this group never reaches pytest
            )
        return self

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def children(self) -> list[int]:
        """The prefork pool's child processes."""
        found: list[int] = []
        with contextlib.suppress(FileNotFoundError):
            for task in Path(f"/proc/{self.pid}/task").iterdir():
                with contextlib.suppress(FileNotFoundError):
                    found += [int(c) for c in (task / "children").read_text().split()]
        return found

    def kill(self) -> None:
        """SIGKILL the main process only (its pool children find themselves orphaned)."""
        if self.alive():
            os.kill(self.pid, signal.SIGKILL)
            assert self.popen is not None
            self.popen.wait()

    def stop(self, timeout: float = 20) -> None:
        if self.popen is None:
            return
        if self.popen.poll() is None and timeout > 0:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=timeout)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)  # what is left of the group: orphaned children
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=5)


@dataclass
class RedisServer:
    """A Redis of the run's own on a spare port, with an append-only file."""

    folder: Path
    port: int = field(default_factory=spare_port)
    process: Process | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        command = [
            "redis-server",
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.folder),
            "--appendonly",
            "yes",
            "--appendfsync",
            "everysec",
            "--save",
            "",
            "--maxmemory-policy",
            "noeviction",
        ]
        log = self.folder.parent / "redis.log"
        self.process = Process("redis", command, dict(os.environ), log).start()
        wait_until(self.answers, timeout=20, what="redis to answer")

    def answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def kill_and_restart_empty(self) -> None:
        """kill -9, lose the append-only file too (a new host, a lost volume), start again."""
        assert self.process is not None
        self.process.kill()
        shutil.rmtree(self.folder, ignore_errors=True)
        self.start()

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()


@dataclass
class Cluster:
    """Every process of one deployment, and what a chaos run needs to drive and kill them."""

    folder: Path
    settings: Settings
    redis: RedisServer
    postgres: PostgresServer
    sink: ChaosSink
    agent: Agent
    api_port: int
    concurrency: int
    workers: list[Process] = field(default_factory=list)
    beats: list[Process] = field(default_factory=list)
    api: Process | None = None
    started_workers: int = 0
    seeded: list[str] = field(default_factory=list)  # secrets raised, never to be found

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def env(self) -> dict[str, str]:
        return settings_env(self.settings)

    def celery(self, *args: str, app: str = "workers.celery_app") -> list[str]:
        return [sys.executable, "-m", "celery", "-A", app, *args]

    def start_worker(self) -> Process:
        """One prefork worker, as docker-compose's `worker` service runs it."""
        self.started_workers += 1
        name = f"worker{self.started_workers}"
        command = self.celery(
            "worker",
            "--pool",
            "prefork",
            "--concurrency",
            str(self.concurrency),
            "--hostname",
            f"{name}-{secrets.token_hex(3)}@chaos",
            "--without-mingle",
            "--without-gossip",
            "--without-heartbeat",
            "--loglevel",
            "warning",
        )
        worker = Process(name, command, self.env, self.folder / f"{name}.log").start()
        self.workers.append(worker)
        return worker

    def start_beat(self, index: int, *, keep: bool = True) -> Process:
        """A beat of its own schedule file; two of them double the sweeps, never a page."""
        schedule = self.folder / f"beat{index}-schedule"
        command = self.celery(
            "beat", "--schedule", str(schedule), "--loglevel", "warning", app="workers.beat_app"
        )
        beat = Process(f"beat{index}", command, self.env, self.folder / f"beat{index}.log")
        beat.start()
        if keep:
            self.beats.append(beat)
        return beat

    def start_api(self) -> None:
        command = [
            sys.executable,
            "-m",
            "uvicorn",
            "--factory",
            "api.app:app_from_env",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.api_port),
            "--log-level",
            "warning",
            "--no-proxy-headers",
        ]
        self.api = Process("api", command, self.env, self.folder / "api.log").start()
        wait_until(self.api_answers, timeout=60, what="the API to answer /healthz")

    def api_answers(self) -> bool:
        return answers(self.api_url, timeout=2)

    def live_workers(self) -> list[Process]:
        return [w for w in self.workers if w.alive()]

    def worker_children(self) -> list[int]:
        return [child for worker in self.live_workers() for child in worker.children()]

    def heal(self, workers: int) -> None:
        """Back to a healthy deployment before a fault: every server up, `workers` workers."""
        if not self.redis.answers():
            self.redis.start()
        with contextlib.suppress(subprocess.CalledProcessError):
            self.postgres.start()  # already running: pg_ctl refuses, nothing changes
        for worker in [w for w in self.workers if not w.alive()]:
            worker.stop()
            self.workers.remove(worker)
        while len(self.workers) < workers:
            self.start_worker()
        for index, beat in enumerate(self.beats):
            if not beat.alive():
                beat.stop()
                self.beats[index] = self.start_beat(index, keep=False)
        self.sink.mode = "ok"
        wait_until(self.api_answers, timeout=60, what="a healthy API")
        wait_until(self.consuming, timeout=60, what="every worker to consume")

    def consuming(self) -> bool:
        """Every worker's pool is up (its children exist)."""
        return all(len(w.children()) >= self.concurrency for w in self.live_workers())

    def logs(self) -> str:
        """Every process's log, PostgreSQL's own included, for the auditor's secret check."""
        paths = [*self.folder.glob("*.log"), self.postgres.data_dir / "server.log"]
        texts = [path.read_text(errors="replace") for path in paths if path.exists()]
        return "\n".join([*texts, self.agent.log()])

    def stop(self) -> None:
        """Every process at once, outright: nothing here needs a clean shutdown any more."""
        processes = [*self.workers, *self.beats, *([self.api] if self.api else [])]
        for process in processes:
            process.stop(timeout=0)
        self.agent.process.kill()
        self.agent.process.wait()
        self.redis.stop()


def chaos_settings(folder: Path, redis: RedisServer, postgres: PostgresServer, **over: Any) -> Any:
    return dict(
        home=folder / "home",
        design=DESIGN,
        database_url=postgres.url,
        broker_url=redis.url,
        queue=f"chaos-{secrets.token_hex(4)}",
        api_tokens=f"agent:{AGENT_TOKEN},operator:{OPERATOR_TOKEN}",
        webhook_secret=secrets.token_hex(16),
        answer_key=secrets.token_hex(16),
        sweep_interval=SIZES.sweep_interval,
        stall_after=SIZES.stall_after,
        max_stage_attempts=10,
        delivery_tries=2,
        delivery_backoff=0.05,
        delivery_retry_interval=0.5,
        delivery_max_attempts=30,
        send_timeout=2.0,
        intake_retry_for=3.0,
        intake_retry_max_delay=0.5,
        wake_ack_wait=4.0,
        wake_redeliveries=5,
        **over,
    )


@contextlib.contextmanager
def running_cluster(
    *, agent_python: Path, workers: int = 2, concurrency: int = 2, beats: int = 2
) -> Iterator[Cluster]:
    """A whole deployment in a fresh folder; every process stopped and removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="escalate-chaos-"))
    sink = ChaosSink.start()
    redis = RedisServer(folder / "redis")
    try:
        redis.start()
        with own_postgres() as postgres:
            api_port = spare_port()
            settings = Settings(
                **chaos_settings(folder, redis, postgres),
                apprise_config=write_apprise_config(folder / "apprise.yaml", sink, TAGS),
                public_url=f"http://127.0.0.1:{api_port}",
                outbound_allow=f"127.0.0.1:{sink.port}",
            )
            upgrade(settings)
            agent = start_agent(agent_python, folder / "agent", broker_url=redis.url)
            cluster = Cluster(folder, settings, redis, postgres, sink, agent, api_port, concurrency)
            try:
                for _ in range(workers):
                    cluster.start_worker()
                for index in range(beats):
                    cluster.start_beat(index)
                cluster.start_api()
                cluster.heal(workers)
                yield cluster
            finally:
                cluster.stop()
    finally:
        redis.stop()
        sink.stop()
        shutil.rmtree(folder, ignore_errors=True)


def wait_for(probe: Any, until: Any = bool, *, timeout: float, what: str) -> Any:
    """wait_until with the chaos suite's polling pace (SQL reads, not a busy loop)."""
    return wait_until(probe, until, timeout=timeout, what=what, every=0.2)


def elapsed(since: float) -> float:
    return round(time.monotonic() - since, 1)
