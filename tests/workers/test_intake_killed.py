"""A worker child killed in the middle of an intake loses nothing (issue #9): the message is
acknowledged only once the case is stored (acks_late), and a killed child gives it back
(reject_on_worker_lost), so another child stores it, once. A real prefork worker process."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, select

from models.db import make_engine
from models.settings import Settings
from models.tables import Escalation
from tests.support.waiting import wait_until
from tests.workers.conftest import DESIGN
from tests.workers.test_faults import children_of, prefork_worker  # noqa: F401 (a fixture)
from workers import names
from workflows.examples import valid_packet


@pytest.fixture
def settings(settings: Settings, tmp_path: Path) -> Settings:
    """The design is read from a pipe: an intake blocks there until the test writes it."""
    pipe = tmp_path / "design.yaml"
    os.mkfifo(pipe)
    return settings.model_copy(update={"design": pipe})


def reading_the_design(worker: subprocess.Popen[bytes], *, not_pid: int = 0) -> int:
    """The worker child blocked opening the design pipe, mid-intake."""

    def blocked() -> int | None:
        for child in children_of(worker.pid):
            try:
                waiting = Path(f"/proc/{child}/wchan").read_text()
            except OSError:
                continue
            if child != not_pid and waiting == "wait_for_partner":
                return child
        return None

    found = wait_until(blocked, timeout=60, every=0.1, what="a child mid-intake")
    assert found is not None
    return found


@pytest.mark.parametrize("backend", ["redis-postgres"], indirect=True)
def test_a_worker_child_killed_mid_intake_gives_the_message_back_and_it_is_stored_once(
    settings: Settings,
    prefork_worker: subprocess.Popen[bytes],  # noqa: F811
    celery_app: Any,
    beat: Any,
) -> None:
    # Given a raise by name whose intake is under way in the worker's child
    celery_app.send_task(
        names.ESCALATE, kwargs={"packet": {**valid_packet(), "packet_id": "esc-killed-intake"}}
    )
    child = reading_the_design(prefork_worker)
    # When that child is killed outright
    os.kill(child, signal.SIGKILL)
    # Then the message is given back and a new child takes up the intake
    reading_the_design(prefork_worker, not_pid=child)
    with open(settings.design_path, "w", encoding="utf-8") as pipe:
        pipe.write(DESIGN.read_text(encoding="utf-8"))
    # And the case is stored, once, and goes on
    engine = make_engine(settings)

    def stored() -> list[Escalation]:
        with Session(engine) as session:
            query = select(Escalation).where(Escalation.packet_id == "esc-killed-intake")
            return list(session.exec(query))

    rows = wait_until(stored, timeout=60, every=0.1, what="the case stored")
    assert len(rows) == 1 and rows[0].state != "refused"
    engine.dispose()
