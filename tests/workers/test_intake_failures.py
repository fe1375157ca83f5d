"""Intake is never acked unseen (issue #9): an escalation sent by name is either stored, or
refused with a reason the sender can find by run and packet id. Beyond database outages
(tests/workers/test_intake_outage.py): a design that cannot be loaded, a fault of ours."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from models.settings import Settings
from models.tables import Escalation
from tests.workers.conftest import DESIGN, Harness
from workers import intake
from workflows.examples import valid_packet

pytestmark = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
AGENT = {"Authorization": "Bearer agent-token"}


@pytest.fixture
def settings(settings: Settings, tmp_path: Path) -> Settings:
    """A design file the test may break, and short pauses between intake tries."""
    design = tmp_path / "design.yaml"
    shutil.copy(DESIGN, design)
    return settings.model_copy(
        update={"design": design, "intake_failure_retries": 3, "intake_failure_delay": 0.1}
    )


def cases_of(service: Harness, packet_id: str) -> list[Escalation]:
    with Session(service.engine) as session:
        return list(session.exec(select(Escalation).where(Escalation.packet_id == packet_id)))


def test_a_design_that_cannot_be_loaded_ends_in_a_refused_case_the_sender_can_find(
    service: Harness, api: TestClient
) -> None:
    # Given the service's design file broken by an operator
    Path(service.settings.design_path).write_text("severities: [not, a, mapping\n")
    # When a run raises by name
    service.send({**valid_packet(), "packet_id": "esc-nodesign-1"})
    # Then, after its tries, the request is stored as refused, saying why
    [refused] = service.wait(lambda _s: cases_of(service, "esc-nodesign-1"), timeout=30)
    assert refused.state == "refused"
    [problem] = refused.problems
    assert problem.startswith("intake: the service could not admit this escalation after 4 tries")
    assert "the design cannot be loaded" in problem and "YAML syntax error" in problem
    # And the sender finds it by run and packet id
    listed = api.get("/v1/escalations", params={"run": "run-8842"}, headers=AGENT).json()
    assert [(c["packet_id"], c["state"]) for c in listed] == [("esc-nodesign-1", "refused")]


def test_a_design_fixed_while_the_intake_waits_stores_the_case_as_sent(
    service: Harness, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    tries: list[str] = []
    real = intake.admit_here

    def counted(runtime: Any, request: Any) -> Any:
        try:
            return real(runtime, request)
        finally:  # counted once it is over: a try still under way may yet read the file
            tries.append(request["packet"]["packet_id"])

    monkeypatch.setattr(intake, "admit_here", counted)  # only counts: the real one runs
    # Given a design file missing when the run raises
    design = Path(settings.design_path)
    good = design.read_text()
    design.unlink()
    service.send({**valid_packet(), "packet_id": "esc-nodesign-2"})
    service.wait(lambda _s: tries or None, what="a first try")
    # When the operator puts it back while more tries are to come
    design.write_text(good)
    # Then the case is stored once, as it was sent, and routed
    case = service.case("run-8842", "esc-nodesign-2", timeout=30)
    service.in_state(case.id, "awaiting", "followed_up", "decided", "closed")
    assert len(cases_of(service, "esc-nodesign-2")) == 1 and len(tries) >= 2


def test_a_fault_of_ours_is_tried_again_and_a_lasting_one_is_refused_without_its_text(
    service: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = intake.admit
    failures = itertools.count()

    def faulty(request: Any, **options: Any) -> Any:
        packet_id = request["packet"]["packet_id"]
        if packet_id == "esc-fault-always" or next(failures) < 2:
            raise RuntimeError(f"a bug that prints the packet: {request['packet']}")
        return real(request, **options)

    monkeypatch.setattr(intake, "admit", faulty)
    # Given a fault that stops the intake twice, then passes
    service.send({**valid_packet(), "packet_id": "esc-fault-twice"})
    # Then the case is stored, once
    case = service.case("run-8842", "esc-fault-twice", timeout=30)
    assert case.state != "refused" and len(cases_of(service, "esc-fault-twice")) == 1
    # Given a fault that never passes
    service.send({**valid_packet(), "packet_id": "esc-fault-always", "blocked_on": "hunter2"})
    # Then the request ends refused, naming the fault's type and place, never its message
    [refused] = service.wait(lambda _s: cases_of(service, "esc-fault-always"), timeout=30)
    [problem] = refused.problems
    assert refused.state == "refused" and "an unexpected RuntimeError at" in problem
    assert "hunter2" not in problem and "prints the packet" not in problem
