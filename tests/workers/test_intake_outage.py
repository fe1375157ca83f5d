"""Intake is never acked before it is stored: raises sent while PostgreSQL is down all land."""

from __future__ import annotations

import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from sqlmodel import Session, col, func, select

from models.db import make_engine
from models.migrate import upgrade
from models.settings import Settings
from models.tables import Escalation, Event
from tests.support.postgres_server import PostgresServer, own_postgres
from tests.support.processes import settings_env, stop
from tests.support.services import REDIS, REDIS_URL, require
from tests.support.sink import HttpSink
from tests.support.waiting import wait_until
from tests.workers.conftest import DESIGN, write_apprise_config
from workflows.examples import valid_packet

RAISES = 20
GIVEN_BACK = "intake not stored, message given back to the broker"


@pytest.fixture
def postgres() -> Iterator[PostgresServer]:
    with own_postgres() as server:
        yield server


@pytest.fixture
def outage_settings(postgres: PostgresServer, tmp_path: Path, sink: HttpSink) -> Settings:
    require(REDIS, "Redis")
    return Settings(
        home=tmp_path / "home",
        design=DESIGN,
        apprise_config=write_apprise_config(tmp_path / "apprise.yaml", sink),
        database_url=postgres.url,
        broker_url=REDIS_URL,
        queue=f"test-{secrets.token_hex(4)}",
        sweep_interval=0.3,
        stall_after=1.0,
        intake_retry_for=1.5,  # short, so messages also go back to the broker and return
        intake_retry_max_delay=0.3,
    )


@pytest.fixture
def service_worker(outage_settings: Settings, tmp_path: Path) -> Iterator[Path]:
    """The service as it is deployed: a prefork worker with beat, in its own process."""
    upgrade(outage_settings)
    log = tmp_path / "worker.log"
    env = settings_env(outage_settings)
    with log.open("wb") as output:
        worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "workers.celery_app",
                "worker",
                "--beat",
                "--schedule",
                str(tmp_path / "beat-schedule"),
                "--pool",
                "prefork",
                "--concurrency",
                "2",
                "--without-mingle",
                "--without-gossip",
                "--without-heartbeat",
                "--loglevel",
                "warning",
            ],
            env=env,
            cwd=Path(__file__).resolve().parents[2],
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    yield log
    stop(worker, grace=30)


def raise_by_name(client: Celery, queue: str, packet_id: str) -> None:
    """An agent's raise: by task name, on the service's queue, nothing of ours imported."""
    # A question of its own: the same open question from one run would join that case.
    packet: dict[str, Any] = {
        **valid_packet(),
        "packet_id": packet_id,
        "blocked_on": f"The records of batch {packet_id}.",
    }
    client.send_task("escalation.escalate", kwargs={"packet": packet}, queue=queue)


@pytest.mark.services
def test_raises_sent_while_the_database_is_down_are_all_stored_and_closed(
    postgres: PostgresServer, outage_settings: Settings, service_worker: Path
) -> None:
    settings = outage_settings
    client = Celery("agent", broker=settings.broker_url)
    engine = make_engine(settings)

    def count(statement: Any) -> int:
        with Session(engine) as session:
            return int(session.exec(statement).one())

    stored = select(func.count()).select_from(Escalation).where(Escalation.run_id == "run-8842")
    closed = stored.where(col(Escalation.state) == "closed")
    try:
        # Given a running service that has stored a case (so its worker is consuming)
        raise_by_name(client, settings.queue, "esc-outage-warmup")
        wait_until(lambda: count(stored), lambda n: n == 1, timeout=60, what="the warm-up case")
        # When PostgreSQL stops while 20 raises arrive
        postgres.stop()
        for index in range(RAISES):
            raise_by_name(client, settings.queue, f"esc-outage-{index}")
        # ... long enough that deliveries run out of retries and go back to the broker
        wait_until(
            lambda: service_worker.read_text(errors="replace").count(GIVEN_BACK),
            lambda given_back: given_back >= 2,
            timeout=60,
            what=f"'{GIVEN_BACK}' in the worker's log",
        )
        # And it starts again
        postgres.start()
        # Then every raise is a case, exactly once, and each reaches its close entry
        wait_until(
            lambda: count(closed),
            lambda n: n == RAISES + 1,
            timeout=90,
            what=f"{RAISES + 1} closed cases",
        )
        assert count(stored) == RAISES + 1
        with Session(engine) as session:
            accepted = session.exec(
                select(Escalation.packet_id, func.count())
                .join(Event, col(Event.escalation_id) == col(Escalation.id))
                .where(Event.kind == "accepted")
                .group_by(col(Escalation.packet_id))
            ).all()
        assert sorted(accepted) == sorted(
            [(f"esc-outage-{i}", 1) for i in range(RAISES)] + [("esc-outage-warmup", 1)]
        )
    finally:
        engine.dispose()
