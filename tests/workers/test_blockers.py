"""A task blocked by several escalations wakes once, after the last (SPEC §8)."""

from __future__ import annotations

import itertools

import pytest
from fastapi.testclient import TestClient

from tests.support.agent_venv import AgentWorker
from tests.workers.conftest import Harness
from workers.answers import answer
from workers.runtime import runtime_for
from workflows.examples import valid_packet

AGENT = {"Authorization": "Bearer agent-token"}


def three_cases(service: Harness, api: TestClient, prefix: str) -> list[str]:
    ids = []
    for index in range(3):
        body = {
            "packet": {
                **valid_packet(),
                "packet_id": f"{prefix}-{index}",
                "requested_action": f"Question {index}?",
                "blocked_on": f"Point {index} of {prefix}.",
            }
        }
        ids.append(api.post("/v1/escalations", headers=AGENT, json=body).json()["id"])
    for escalation_id in ids:
        service.in_state(escalation_id, "awaiting", "followed_up")
    return ids


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_three_blockers_in_any_order_wake_the_task_exactly_once(
    service: Harness, api: TestClient, agent: AgentWorker, order: tuple[int, int, int]
) -> None:
    ids = three_cases(service, api, f"blk{''.join(map(str, order))}")
    linked = api.post(
        "/v1/tasks/T-7/blockers",
        headers=AGENT,
        json={"escalations": ids, "wake": agent.wake_spec},
    )
    assert linked.status_code == 201
    assert [c["title"] for c in linked.json()["blockers"]] == [
        f"Decision needed: Question {i}?" for i in sorted(range(3), key=lambda i: ids[i])
    ]
    # Linking the same set again changes nothing
    assert (
        api.post(
            "/v1/tasks/T-7/blockers",
            headers=AGENT,
            json={"escalations": ids, "wake": agent.wake_spec},
        ).status_code
        == 200
    )
    runtime = runtime_for(service.app)
    for step, index in enumerate(order):
        answer(runtime, ids[index], option="approve", responder=f"op{step}", channel="test")
        service.in_state(ids[index], "closed")
        if step < 2:  # not the last one: nobody is woken
            assert agent.wakes() == []
    agent.wait_for_wakes(1)
    # One wake-up row for the set, however many sweeps ran: the claim is a conditional update
    wakes = [d for i in ids for d in service.deliveries(i) if d.purpose.startswith("task_wake")]
    assert len(wakes) == 1
    [payload] = agent.wait_for_wakes(1)
    assert payload["task"] == "T-7" and payload["reason"] == "blockers_resolved"
    assert sorted(b["title"] for b in payload["blockers"]) == [
        f"Decision needed: Question {i}?" for i in range(3)
    ]
    assert all(b["decision"]["option"] == "approve" for b in payload["blockers"])
    cards = api.get("/v1/tasks/T-7/blockers", headers=AGENT).json()
    assert cards["waits"][0]["woken_at"] is not None


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_linking_unknown_escalations_or_no_wake_is_refused(
    service: Harness, api: TestClient
) -> None:
    unknown = api.post(
        "/v1/tasks/T-1/blockers",
        headers=AGENT,
        json={"escalations": ["nope"], "wake": {"task": "x"}},
    )
    assert unknown.status_code == 404 and "nope" in unknown.json()["detail"]
    no_wake = api.post("/v1/tasks/T-1/blockers", headers=AGENT, json={"escalations": ["a"]})
    assert no_wake.status_code == 422 and "wake" in no_wake.json()["detail"]
