"""Races peers' users report (#9): an answer at the timeout, an answer before the page is
recorded as sent, a late answer after the default. Each ends in exactly one outcome."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from models.settings import Settings
from models.tables import Delivery
from tests.workers.conftest import DESIGN, Harness
from workers.answering import reply_token
from workers.answers import Answer, answer
from workers.runtime import runtime_for
from workflows.examples import valid_packet

pytestmark = pytest.mark.parametrize("backend", ["sqlite", "redis-postgres"], indirect=True)
# The answers that race the timeout itself are `impatient` (the test design's seconds); the
# answer during the first send is not: a loaded machine let a 2 s default decide while its
# 3 s send was under way (the answer: superseded, 409).
OPERATOR = {"Authorization": "Bearer op-token"}
HIGH = "high:     {window: 1s, timeout: 2s,"


@pytest.fixture
def settings(settings: Settings, tmp_path: Path, request: pytest.FixtureRequest) -> Settings:
    """The test design, but a high case waits 60 s past its follow-up: each race sets the
    moment its timeout falls due itself. With the design's one second, a worker starved
    at full suite load followed up late and defaulted at once, before a poll saw the case
    followed up."""
    if request.node.get_closest_marker("impatient") is None:
        return settings
    design = DESIGN.read_text(encoding="utf-8")
    assert HIGH in design, "the test design's high tier changed: update HIGH"
    path = tmp_path / "design-races.yaml"
    path.write_text(design.replace(HIGH, "high: {window: 1s, timeout: 61s,"), encoding="utf-8")
    return settings.model_copy(update={"design": path})


def followed_up(service: Harness, packet_id: str) -> str:
    """A high case (window 1 s) past its follow-up, waiting out its timeout."""
    service.send(
        {**valid_packet(), "packet_id": packet_id, "severity": "high", "waiting_behavior": "paused"}
    )
    case = service.case("run-8842", packet_id)
    service.in_state(case.id, "followed_up", timeout=30)
    return case.id


@pytest.mark.impatient
@pytest.mark.parametrize("offset_ms", [-50, -20, 0, 20, 50])
def test_an_answer_within_50_ms_of_the_timeout_yields_exactly_one_outcome(
    service: Harness, offset_ms: int
) -> None:
    # Given a case whose timeout falls due in a moment
    case_id = followed_up(service, f"esc-race-{offset_ms + 100}")
    due = _due_now(service, case_id, timedelta(seconds=0.3))
    # When a person answers within ±50 ms of the moment the sweeper may apply the default
    time.sleep(max(0.0, (due - datetime.now(UTC)).total_seconds() + offset_ms / 1000))
    result = answer(
        runtime_for(service.app), case_id, option="approve", responder="ana", channel="test"
    )
    closed = service.in_state(case_id, "closed", timeout=30)
    # Then there is one decision, and the reply was told which one
    [decision] = service.decisions(case_id)
    if result.decided:
        assert not decision.is_default and decision.option == "approve"
        assert closed.outcome == "decided"
    else:
        assert result.outcome == "superseded" and decision.is_default
        assert "Nobody answered in time: the default retry applied" in result.message
        assert closed.outcome == "defaulted"


def test_an_answer_while_the_first_page_is_still_being_sent_decides(
    service: Harness, api: TestClient
) -> None:
    # Given a channel that takes 3 s to accept the first page
    service.sink.script("/ops", (200, 3.0))
    service.send({**valid_packet(), "packet_id": "esc-race-early"})
    case = service.case("run-8842", "esc-race-early")
    service.in_state(case.id, "awaiting")
    code = reply_token(runtime_for(service.app).answer_key, case.id)
    service.wait(
        lambda s: [d for d in _deliveries(s, case.id) if d.state == "sending"],
        what="the page being sent",
    )
    # When the operator answers before the send is recorded
    reply = api.post(
        "/v1/inbound/text",
        headers=OPERATOR,
        json={"text": f"{code} approve", "channel": "chat", "sender": "ana"},
    )
    # Then the answer decides, and the case closes on it
    assert reply.status_code == 200 and reply.json()["outcome"] == "decided"
    assert service.in_state(case.id, "closed", timeout=30).outcome == "decided"


@pytest.mark.impatient
def test_a_late_answer_after_the_default_is_told_what_happened(service: Harness) -> None:
    case_id = followed_up(service, "esc-race-late")
    _due_now(service, case_id)
    service.in_state(case_id, "closed", timeout=30)
    late: Answer = answer(
        runtime_for(service.app), case_id, option="approve", responder="ana", channel="test"
    )
    assert late.outcome == "superseded"
    assert late.message.startswith("Nobody answered in time: the default retry applied at ")
    assert late.decision is not None and late.decision["is_default"] is True


@pytest.mark.impatient
def test_fifty_answers_racing_the_timeout_give_one_decision(service: Harness) -> None:
    case_id = followed_up(service, "esc-race-many")
    _due_now(service, case_id)  # the sweeper races the answers
    results: list[Answer] = []

    def reply(n: int) -> None:
        runtime = runtime_for(service.app)
        results.append(
            answer(runtime, case_id, option="approve", responder=f"op{n}", channel="test")
        )

    threads = [threading.Thread(target=reply, args=(n,)) for n in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    service.in_state(case_id, "closed", timeout=30)
    assert len(service.decisions(case_id)) == 1
    assert sum(r.decided for r in results) <= 1


def _due_now(service: Harness, case_id: str, after: timedelta = timedelta(0)) -> datetime:
    """Bring the case's timeout to now (+ `after`)."""
    due = datetime.now(UTC) + after
    service.change(case_id, next_action_at=due)
    return due


def _deliveries(session: Session, case_id: str) -> list[Delivery]:
    from sqlmodel import select

    return list(session.exec(select(Delivery).where(Delivery.escalation_id == case_id)))
