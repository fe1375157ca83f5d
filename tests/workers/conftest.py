"""A real Celery worker (one per test process, lent to each test) and beat, on SQLite or on
Redis + PostgreSQL."""

from __future__ import annotations

import re
import secrets
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from celery import Celery
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from api.app import create_app
from models.db import make_engine
from models.migrate import upgrade
from models.settings import Settings
from models.tables import Decision, Delivery, Escalation, Event
from tests.support.agent_venv import AgentWorker, cached_celery_only_venv, start_agent_worker
from tests.support.beat import ThreadBeat
from tests.support.services import REDIS, REDIS_URL, fresh_postgres_database, require
from tests.support.shared_worker import SharedWorkers
from tests.support.sink import HttpSink
from tests.support.waiting import wait_until
from workers import names
from workers.app import make_celery

DESIGN = Path(__file__).resolve().parent.parent / "support" / "design-test.yaml"
TAGS = ("ops", "ops-log", "oncall", "pager", "ops-low")
T = TypeVar("T")


def windows_text(window: str, timeout: str) -> str:
    """The test design with every tier's window and timeout set to these."""
    every = f"window: {window}, timeout: {timeout}"
    return re.sub(r"window: \d+s, timeout: \d+s", every, DESIGN.read_text())


def patient_text() -> str:
    """The test design with windows of minutes instead of seconds."""
    return windows_text("10m", "20m")


def patient_design(folder: Path) -> Path:
    """A copy of the test design whose windows no answer can race: on a loaded 2-core machine
    a test's own requests can outlast a two-second timeout it does not mean to test."""
    path = folder / "design-patient.yaml"
    path.write_text(patient_text(), encoding="utf-8")
    return path


def write_apprise_config(path: Path, sink: Any, tags: tuple[str, ...] = TAGS) -> Path:
    """Each tag posts to its own path on the sink (anything with a `url`), so a test can
    tell recipients apart."""
    host = sink.url.removeprefix("http://")
    lines = ["urls:"]
    for tag in tags:
        lines += [f"  - json://{host}/{tag}:", f"      tag: {tag}"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(params=["sqlite", "redis-postgres"])
def backend(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """Embedded defaults (SQLite DB + SQLite broker), or Redis broker + PostgreSQL."""
    if request.param == "sqlite":
        yield {}
        return
    require(REDIS, "Redis")
    with fresh_postgres_database() as url:
        yield {"database_url": url, "broker_url": REDIS_URL}


@pytest.fixture
def settings(
    backend: dict[str, Any], tmp_path: Path, sink: HttpSink, request: pytest.FixtureRequest
) -> Settings:
    """Windows of minutes and a sweep each second, unless the test is marked `impatient` (it
    tests the windows: a sweep every quarter second keeps their follow-ups and defaults
    near their due times). An idle service sweeping every 0.25 s spends about 0.1 s of CPU
    a second; every 1 s, 0.03."""
    impatient = request.node.get_closest_marker("impatient") is not None
    return Settings(
        home=tmp_path / "home",
        design=DESIGN if impatient else patient_design(tmp_path),
        apprise_config=write_apprise_config(tmp_path / "apprise.yaml", sink),
        queue=f"test-{secrets.token_hex(4)}",  # a private queue per test on the shared Redis
        sweep_interval=0.25 if impatient else 1.0,
        stall_after=1.0,
        max_stage_attempts=3,
        delivery_tries=2,
        delivery_backoff=0.05,
        delivery_retry_interval=0.3,
        delivery_max_attempts=3,
        # Ample for a sink's 500 at full suite load: a slower answer reads as unknown (held,
        # never abandoned), and a test of a failing channel then waits in vain. Hang tests
        # set their own.
        send_timeout=10.0,
        # Runs' webhooks and http probes reach only this test's sink (loopback is refused).
        outbound_allow=f"127.0.0.1:{sink.server.server_port}",
        **backend,
    )


@dataclass
class Woken:
    """Payloads the test's wake-up task received."""

    payloads: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
def woken() -> Woken:
    return Woken()


@pytest.fixture
def celery_app(settings: Settings, shared_workers: SharedWorkers) -> Iterator[Celery]:
    """Our app, built the production way, on the test's own queue; nothing consumes it
    until the test takes a worker (`service`)."""
    upgrade(settings)
    shared_workers.link_broker(settings)
    app = make_celery(settings)
    app.set_current()
    yield app


@pytest.fixture
def worker(
    celery_app: Celery, settings: Settings, shared_workers: SharedWorkers, woken: Woken
) -> Iterator[Celery]:
    """The process's shared worker running this test's settings on this test's queue."""
    with shared_workers.for_settings(settings).lent(settings, woken.payloads.append) as app:
        celery_app.set_current()  # the test's own app stays this thread's current one
        yield app


@pytest.fixture(scope="session")
def celery_only_python() -> Path:
    """A Python with only celery installed (built once, kept beside our venv): the agent's side."""
    return cached_celery_only_venv(Path(sys.prefix) / "test-venvs")


def broker_for_agents(settings: Settings) -> tuple[str, dict[str, Any]]:
    """The broker URL and transport options an agent's own app uses to reach our broker."""
    if not settings.embedded_broker:
        return settings.resolved_broker_url, {}
    # Our folder broker writes kombu's filesystem format (renamed into place, whole): an
    # agent reads it with kombu's own transport.
    folder = settings.broker_folder
    options = {
        "data_folder_in": str(folder / "queue"),
        "data_folder_out": str(folder / "queue"),
        "control_folder": str(folder / "control"),
        "polling_interval": 0.1,
    }
    return "filesystem://", options


@pytest.fixture
def agent(
    settings: Settings, celery_app: Celery, celery_only_python: Path, tmp_path: Path
) -> Iterator[AgentWorker]:
    """The run's own worker, in its own process, on its own queue, importing nothing of ours
    (after `celery_app`, which makes the broker folder it reads)."""
    url, options = broker_for_agents(settings)
    worker = start_agent_worker(
        celery_only_python,
        tmp_path / "agent",
        broker_url=url,
        broker_options=options,
        queue=f"agent-{secrets.token_hex(4)}",
    )
    yield worker
    worker.stop()


@pytest.fixture
def beat(celery_app: Celery, tmp_path: Path) -> Iterator[ThreadBeat]:
    service = ThreadBeat(celery_app, tmp_path / "beat-schedule")
    service.start()
    yield service
    service.stop()


@dataclass
class Harness:
    """What a test needs to drive and observe one running service."""

    app: Celery
    settings: Settings
    engine: Engine
    sink: HttpSink
    woken: Woken

    def send(self, packet: dict[str, Any], **parts: Any) -> None:
        """Raise as an agent does: by task name, without importing our code."""
        self.app.send_task(names.ESCALATE, kwargs={"packet": packet, **parts})

    def wait(
        self, probe: Callable[[Session], T | None], timeout: float = 60, what: str = "condition"
    ) -> T:
        """Poll SQL (the truth) until `probe` returns something; fail after `timeout`."""

        def once() -> T | None:
            with Session(self.engine) as session:
                return probe(session)

        found = wait_until(once, timeout=timeout, what=what)
        assert found is not None
        return found

    def case(self, run_id: str, packet_id: str, timeout: float = 60) -> Escalation:
        return self.wait(
            lambda s: s.exec(
                select(Escalation).where(
                    Escalation.run_id == run_id, Escalation.packet_id == packet_id
                )
            ).first(),
            timeout,
            f"case {run_id}/{packet_id}",
        )

    def in_state(self, escalation_id: str, *states: str, timeout: float = 60) -> Escalation:
        def probe(session: Session) -> Escalation | None:
            row = session.get(Escalation, escalation_id)
            return row if row is not None and row.state in states else None

        try:
            return self.wait(probe, timeout, f"{escalation_id} in {states}")
        except AssertionError as timed_out:
            # Read once, on a timeout only: where the case stood (a flake at full suite load
            # said only "last saw None").
            raise AssertionError(f"{timed_out}; {self.standing(escalation_id)}") from None

    def change(self, escalation_id: str, **fields: Any) -> None:
        """Set columns of a case directly, as a test's given needs it."""
        with Session(self.engine) as session:
            row = session.get(Escalation, escalation_id)
            assert row is not None, escalation_id
            for name, value in fields.items():
                setattr(row, name, value)
            session.add(row)
            session.commit()

    def standing(self, escalation_id: str) -> str:
        """The case's state and latest events, as a failed wait reports them."""
        with Session(self.engine) as session:
            row = session.get(Escalation, escalation_id)
        if row is None:
            return "no such case"
        latest = [event.kind for event in self.events(escalation_id)][-5:]
        return f"it stood in {row.state}, latest events {latest}"

    def events(self, escalation_id: str, kind: str | None = None) -> list[Event]:
        with Session(self.engine) as session:
            statement = select(Event).where(Event.escalation_id == escalation_id)
            if kind:
                statement = statement.where(Event.kind == kind)
            return list(session.exec(statement.order_by(col(Event.id))))

    def deliveries(self, escalation_id: str) -> list[Delivery]:
        with Session(self.engine) as session:
            return list(
                session.exec(
                    select(Delivery)
                    .where(Delivery.escalation_id == escalation_id)
                    .order_by(col(Delivery.id))
                )
            )

    def decisions(self, escalation_id: str) -> list[Decision]:
        with Session(self.engine) as session:
            return list(
                session.exec(select(Decision).where(Decision.escalation_id == escalation_id))
            )


@pytest.fixture
def service(
    celery_app: Celery,
    worker: Celery,
    beat: ThreadBeat,
    settings: Settings,
    sink: HttpSink,
    woken: Woken,
) -> Iterator[Harness]:
    engine = make_engine(settings)
    yield Harness(celery_app, settings, engine, sink, woken)
    engine.dispose()


@pytest.fixture
def api(service: Harness) -> Iterator[TestClient]:
    """The HTTP API on the running service's settings, with an agent and an operator token."""
    tokens = "agent:agent-token,operator:op-token"
    with TestClient(
        create_app(service.settings.model_copy(update={"api_tokens": tokens}))
    ) as client:
        yield client
