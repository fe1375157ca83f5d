"""Proof the run resumed (#9): every wake can be acknowledged; silence is redelivered, then
flagged as decided, not resumed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from models.settings import Settings
from tests.support.agent_venv import AgentWorker
from tests.workers.conftest import Harness
from workers import names
from workers.answers import answer
from workers.runtime import runtime_for
from workflows.examples import valid_packet

pytestmark = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)


@pytest.fixture
def ack_wait() -> float:
    """A minute, so a loaded machine's slow acknowledgement is not redelivered meanwhile;
    the redelivery test sets a fraction of a second."""
    return 60.0


@pytest.fixture
def settings(settings: Settings, ack_wait: float) -> Settings:
    """Two redeliveries, each due `ack_wait` seconds after the last wake."""
    return settings.model_copy(update={"wake_ack_wait": ack_wait, "wake_redeliveries": 2})


def decided_case(service: Harness, agent: AgentWorker, packet_id: str, **parts: Any) -> str:
    """A case woken through the agent's own worker (its own process and queue)."""
    service.send({**valid_packet(), "packet_id": packet_id}, wake=agent.wake_spec, **parts)
    case = service.case("run-8842", packet_id)
    service.in_state(case.id, "awaiting")
    decided = answer(
        runtime_for(service.app), case.id, option="approve", responder="ana", channel="test"
    )
    assert decided.outcome == "decided", decided  # a person, not the default, wakes the run
    service.in_state(case.id, "closed")
    return case.id


def test_a_run_that_acknowledges_by_task_is_woken_once(
    service: Harness, agent: AgentWorker
) -> None:
    # Given a decided case whose run is woken by its Celery task
    case_id = decided_case(service, agent, "esc-ack-1")
    [wake] = agent.wait_for_wakes(1)
    # Then the wake says what to call to acknowledge it
    assert wake["wake_id"] == case_id
    assert wake["ack"]["task"] == names.ACK_WAKE and wake["ack"]["args"][0] == case_id
    # When the run acknowledges by task name, as an agent that does not import us would
    service.app.send_task(wake["ack"]["task"], args=wake["ack"]["args"], queue=wake["ack"]["queue"])
    resumed = service.wait(
        lambda s: (
            (row := s.get(type(service.case("run-8842", "esc-ack-1")), case_id))
            and row.resumed_at
            and row
        ),
        what="the acknowledgement",
    )
    assert resumed.resumed_via == "ack" and resumed.ack_due_at is None
    # Then it is never woken again, and nothing is flagged
    service.wait(lambda _s: service.events(case_id, "resumed"), what="the resumed event")
    assert not service.events(case_id, "wake_redelivered")
    assert len(agent.wakes()) == 1


@pytest.mark.parametrize("ack_wait", [0.4])
def test_an_unacknowledged_wake_is_redelivered_then_flagged(
    service: Harness, api: TestClient, agent: AgentWorker
) -> None:
    # Given a decided case whose run never acknowledges
    case_id = decided_case(service, agent, "esc-ack-2")
    # When every redelivery passes unanswered
    service.wait(lambda _s: service.events(case_id, "not_resumed"), timeout=30, what="the flag")
    # Then it was woken once and again twice, with backoff, and shows decided, not resumed
    assert len(agent.wait_for_wakes(3)) == 3
    assert len(service.events(case_id, "wake_redelivered")) == 2
    stats = api.get("/v1/stats", headers={"Authorization": "Bearer op-token"}).json()
    assert stats["decided_not_resumed"] == [case_id]


def test_the_wake_token_acknowledges_over_http_and_nothing_else_does(
    service: Harness, api: TestClient, agent: AgentWorker
) -> None:
    case_id = decided_case(service, agent, "esc-ack-3")
    [wake] = agent.wait_for_wakes(1)
    assert wake["ack"]["url"].endswith(f"/v1/wakes/{case_id}/ack")
    forged = api.post(f"/v1/wakes/{case_id}/ack", params={"token": "0" * 32})
    assert forged.status_code == 403
    assert api.post(f"/v1/wakes/{case_id}/ack").status_code == 401  # no token of any kind
    first = api.post(f"/v1/wakes/{case_id}/ack", params={"token": wake["ack"]["token"]})
    assert first.status_code == 200 and first.json()["first"] is True
    again = api.post(f"/v1/wakes/{case_id}/ack", headers={"Authorization": "Bearer agent-token"})
    assert again.status_code == 200 and again.json()["first"] is False
    assert len(service.events(case_id, "resumed")) == 1


def test_an_open_case_has_no_wake_to_acknowledge(service: Harness, api: TestClient) -> None:
    service.send({**valid_packet(), "packet_id": "esc-ack-4"})
    case = service.case("run-8842", "esc-ack-4")
    service.in_state(case.id, "awaiting")
    response = api.post(f"/v1/wakes/{case.id}/ack", headers={"Authorization": "Bearer agent-token"})
    assert response.status_code == 404


def test_replacing_blocked_md_counts_as_the_shell_loop_resuming(
    service: Harness, tmp_path: Path
) -> None:
    blocked = tmp_path / "BLOCKED.md"
    service.send({**valid_packet(), "packet_id": "esc-ack-5"}, wake={"blocked_file": str(blocked)})
    case = service.case("run-8842", "esc-ack-5")
    service.in_state(case.id, "awaiting")
    line = f"- Escalation: {case.id} (answer: escalate reply {case.id} <choice>)"
    blocked.write_text(f"# Blocked\n{line}\n")  # as escalate raise --blocked-file writes it
    decided = answer(
        runtime_for(service.app), case.id, option="approve", responder="ana", channel="test"
    )
    assert decided.outcome == "decided", decided  # a person, not the default, wakes the run
    service.wait(lambda _s: service.events(case.id, "resumed"), what="the resume")
    assert not blocked.exists() and (tmp_path / "DECISION.md").exists()
    [event] = service.events(case.id, "resumed")
    assert event.detail == {"via": "blocked_file_removed"}
