"""A task blocked by several escalations wakes once, after the last (SPEC §8)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from models.tables import Delivery, TaskWait
from tests.support.agent_venv import AgentWorker
from tests.workers.conftest import Harness
from workers.answers import answer
from workers.runtime import runtime_for
from workflows.examples import valid_packet

AGENT = {"Authorization": "Bearer agent-token"}


def three_cases(service: Harness, api: TestClient, prefix: str, count: int = 3) -> list[str]:
    ids = []
    for index in range(count):
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
    assert [c["title"] for c in linked.json()["blockers"]] == [  # in the order given
        f"Decision needed: Question {i}?" for i in range(3)
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
    assert payload["task_id"] == "T-7" and payload["reason"] == "task_blockers_resolved"
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


def link(api: TestClient, task: str, ids: list[str], wake: dict[str, str]) -> dict[str, Any]:
    response = api.post(
        f"/v1/tasks/{task}/blockers", headers=AGENT, json={"escalations": ids, "wake": wake}
    )
    assert response.status_code in (200, 201), response.text
    body: dict[str, Any] = response.json()
    return {**body, "status": response.status_code}


def task_wakes(service: Harness, ids: list[str]) -> list[Delivery]:
    return [d for i in ids for d in service.deliveries(i) if d.purpose.startswith("task_wake")]


@pytest.mark.parametrize("backend", ["sqlite", "redis-postgres"], indirect=True)
def test_blockers_added_one_at_a_time_wake_the_task_once_after_the_last(
    service: Harness, api: TestClient, agent: AgentWorker
) -> None:
    # Given a task blocked by e1, then by e1 and e2 as its agent adds them one at a time
    e1, e2 = three_cases(service, api, "one-by-one", count=2)
    assert link(api, "T-8", [e1], agent.wake_spec)["status"] == 201
    extended = link(api, "T-8", [e1, e2], agent.wake_spec)
    assert (extended["status"], extended["added"], extended["created"]) == (201, [e2], False)
    assert [card["escalation_id"] for card in extended["blockers"]] == [e1, e2]
    runtime = runtime_for(service.app)
    # When e1 is decided and closed, the task's set still has e2 open
    answer(runtime, e1, option="approve", responder="ana", channel="test")
    closed = service.in_state(e1, "closed")
    # e1 has no wake of its own: the close found the task's set holding it, so the task's wake
    # carries its decision and its acknowledgement clock is the task's, not its own
    with Session(runtime.engine) as session:
        [open_set] = session.exec(select(TaskWait).where(TaskWait.task == "T-8")).all()
    assert (closed.task_wait_id, closed.ack_due_at) == (open_set.id, None)
    # And when e2 is decided too
    answer(runtime, e2, option="deny", responder="bo", channel="test")
    service.in_state(e2, "closed")
    # Then the task is woken once, with both titles and decisions, in the order added
    [payload] = agent.wait_for_wakes(1)
    assert len(task_wakes(service, [e1, e2])) == 1
    assert payload["resolved_blocker_ids"] == [e1, e2]
    assert [
        (b["title"], b["decision"]["option"], b["decision"]["decided_by"])
        for b in payload["blockers"]
    ] == [
        ("Decision needed: Question 0?", "approve", "ana"),
        ("Decision needed: Question 1?", "deny", "bo"),
    ]
    [task_set] = api.get("/v1/tasks/T-8/blockers", headers=AGENT).json()["waits"]
    assert task_set["woken_at"] is not None and len(task_set["blockers"]) == 2


@pytest.mark.parametrize("backend", ["redis-postgres"], indirect=True)
def test_a_blocker_added_while_the_wake_is_being_sent_starts_the_next_set(
    service: Harness, api: TestClient, agent: AgentWorker
) -> None:
    # Given a task blocked by e1, woken by its worker and a webhook that answers slowly
    e1, e2 = three_cases(service, api, "in-flight", count=2)
    # e2 waits until this test decides it: the test design's default would close it in 2 s,
    # which on a loaded machine came before the link below, waking its own set first
    later = api.post(
        f"/v1/escalations/{e2}/extend",
        headers={"Authorization": "Bearer op-token"},
        json={"minutes": 60, "reason": "decided later in this test"},
    )
    assert later.status_code == 200, later.text
    service.sink.script("/task-wake", (200, 1.5))  # under the send timeout (3 s)
    wake = {**agent.wake_spec, "webhook": f"{service.sink.url}/task-wake"}
    link(api, "T-9", [e1], wake)
    runtime = runtime_for(service.app)
    answer(runtime, e1, option="approve", responder="ana", channel="test")
    # When e2 is added while the wake for e1 is being sent
    service.wait(
        lambda _s: [d for d in task_wakes(service, [e1]) if d.state == "sending"],
        what="the webhook wake in flight",
    )
    added = link(api, "T-9", [e1, e2], wake)
    # Then e2 starts the task's next set (e1's decision is on its way), and e1 is not re-added
    assert (added["status"], added["created"], added["added"], added["already_woken"]) == (
        201,
        True,
        [e2],
        [e1],
    )
    first = agent.wait_for_wakes(1)[0]
    assert first["resolved_blocker_ids"] == [e1]
    service.sink.wait_for(lambda got: any(r.path == "/task-wake" for r in got))
    assert service.sink.posts("/task-wake")[0].body["resolved_blocker_ids"] == [e1]
    # And once e2 is decided the task is woken again, with e2 alone
    answer(runtime, e2, option="approve", responder="bo", channel="test")
    second = agent.wait_for_wakes(2)[1]
    assert second["resolved_blocker_ids"] == [e2]
    assert len(task_wakes(service, [e1, e2])) == 4  # two sets, each by task and by webhook
