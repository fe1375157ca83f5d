"""README "What the run sees", row by row, through the real interfaces against a live serve:
`escalate wait` as a subprocess (its JSON and exit code) and `@require_approval` from the
real client. The wake-up rows are driven by a separate Celery process (tests/workers)."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session

from api.client import (
    ApprovalDenied,
    Defaulted,
    Denied,
    Escalations,
    NoAnswer,
    NotDecided,
    WorldChanged,
    require_approval,
)
from models.db import make_engine
from models.settings import Settings
from models.tables import Escalation
from tests.api.test_serve import ESCALATE, Server, wait_for
from tests.api.test_shell_loop import agent_env
from tests.support.waiting import wait_until
from workflows.examples import valid_packet

Outcome = Callable[[Server, Escalations, str], None]


def impatient(*row: object) -> Any:
    """A row that needs the test design's second-long windows: its default, or a stage that
    must run soon to fail until the case is parked."""
    return pytest.param(*row, marks=pytest.mark.impatient)


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Server:
    """The run's shared serve with windows of minutes, so no timeout default races an answer
    on a loaded machine; the impatient rows use the one on the test design's seconds."""
    impatient = request.node.get_closest_marker("impatient") is not None
    return request.getfixturevalue("live" if impatient else "live_patient")


def state_file(server: Server, packet_id: str) -> Path:
    """The file a case's fingerprint reads: one per row, as the serve is shared."""
    return server.home.parent / f"state-{packet_id}.json"


def answer(option: str) -> Outcome:
    def act(_server: Server, client: Escalations, case_id: str) -> None:
        wait_for(client, case_id, "awaiting", "followed_up")
        client.reply(case_id, option=option, sender="ana")

    return act


def nobody(_server: Server, _client: Escalations, _case_id: str) -> None:
    """The short test design's timeout applies its default within seconds."""


def change_the_world(option: str) -> Outcome:
    def act(server: Server, client: Escalations, case_id: str) -> None:
        wait_for(client, case_id, "awaiting", "followed_up")
        state_file(server, client.get(case_id)["packet_id"]).write_text('{"rows": 118}')
        client.reply(case_id, option=option, sender="ana")

    return act


def park(server: Server, client: Escalations, case_id: str) -> None:
    """Corrupt the case's frozen design and make its follow-up due now: that stage fails
    until the case is parked. On the patient serve nothing else is due, so no timeout
    default can close the case first on a loaded machine."""
    wait_for(client, case_id, "awaiting")
    engine = make_engine(Settings(home=server.home))
    with Session(engine) as session:
        row = session.get(Escalation, case_id)
        assert row is not None
        row.design = {"name": "broken"}
        row.next_action_at = datetime.now(UTC)
        session.add(row)
        session.commit()
    engine.dispose()


def raise_case(server: Server, client: Escalations, run_id: str, packet_id: str) -> str:
    state = state_file(server, packet_id)
    state.write_text('{"rows": 117}')
    created = client.raise_(
        {**valid_packet(), "run_id": run_id, "packet_id": packet_id},
        snapshot={"verified": "117 rows", "fingerprint": {"kind": "file", "path": str(state)}},
    )
    return str(created["id"])


@pytest.mark.parametrize(
    ("scenario", "act", "code", "outcome", "resumes"),
    [
        ("approve", answer("approve"), 0, "decided", True),
        ("deny", answer("deny"), 3, "decided", False),
        impatient("default", nobody, 4, "defaulted", True),  # medium's default: queue
        ("changed", change_the_world("approve"), 5, "reconcile_first", True),
        ("parked", park, 6, "parked", None),
    ],
)
def test_escalate_wait_exits_by_the_table(
    server: Server,
    run_id: str,
    scenario: str,
    act: Outcome,
    code: int,
    outcome: str,
    resumes: bool | None,
) -> None:
    client = server.client()
    case_id = raise_case(server, client, run_id, f"esc-sees-{scenario}")
    waiting = subprocess.Popen(
        [ESCALATE, "wait", case_id, "--timeout", "90"],
        env=agent_env(server),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    act(server, client, case_id)
    out, err = waiting.communicate(timeout=120)
    seen = json.loads(out)
    assert (waiting.returncode, seen["outcome"]) == (code, outcome), err
    assert seen["resumes"] is resumes


@pytest.mark.parametrize(
    ("scenario", "act", "raised"),
    [
        ("deny", answer("deny"), Denied),
        impatient("default", nobody, Defaulted),
        ("changed", change_the_world("approve"), WorldChanged),
        ("parked", park, NotDecided),
    ],
)
def test_require_approval_runs_nothing_unless_a_person_approved(
    server: Server, run_id: str, scenario: str, act: Outcome, raised: type[ApprovalDenied]
) -> None:
    client = server.client()
    ran: list[str] = []
    packet = {**valid_packet(), "run_id": run_id, "packet_id": f"esc-guard-{scenario}"}
    state = state_file(server, packet["packet_id"])
    state.write_text('{"rows": 117}')

    snapshot = {"verified": "117 rows", "fingerprint": {"kind": "file", "path": str(state)}}

    @require_approval(client, packet, timeout=90, snapshot=snapshot)
    def migrate() -> None:
        ran.append("migrated")

    def operator() -> None:
        found: list[dict[str, Any]] = wait_until(
            lambda: client.list(run=run_id),
            timeout=20,
            what="the guarded case",
        )
        act(server, client, found[0]["id"])

    threading.Thread(target=operator, daemon=True).start()
    with pytest.raises(raised):
        migrate()
    assert ran == []


def test_require_approval_says_no_answer_when_its_wait_runs_out(
    server: Server, run_id: str
) -> None:
    client = server.client()
    packet = {**valid_packet(), "run_id": run_id, "packet_id": "esc-guard-slow"}

    @require_approval(client, packet, timeout=0.5)
    def migrate() -> None:
        raise AssertionError("ran without a decision")

    with pytest.raises(NoAnswer):
        migrate()
