"""Wake-ups reach the agent's own worker: a separate process on its own queue, never ours."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session

from models.settings import Settings
from models.tables import Delivery
from tests.support.agent_venv import AgentWorker, start_agent_worker
from tests.workers.conftest import Harness, broker_for_agents
from workers.answers import answer
from workers.runtime import runtime_for
from workflows.examples import valid_packet


def packet(packet_id: str) -> dict[str, Any]:
    return {**valid_packet(), "packet_id": packet_id, "blocked_on": f"The point of {packet_id}."}


def decide(service: Harness, packet_id: str, option: str) -> str:
    """The case of `packet_id`, once open, answered by a person."""
    case = service.case("run-8842", packet_id)
    service.in_state(case.id, "awaiting", "followed_up")
    result = answer(runtime_for(service.app), case.id, option=option, responder="ana", channel="t")
    assert result.decided
    return case.id


def test_the_wake_task_reaches_the_agents_own_worker_once_with_the_decision(
    service: Harness, agent: AgentWorker
) -> None:
    # Given an agent whose own worker (its own app, importing nothing of ours) consumes its
    # own queue, raising and naming that queue for its wake task
    service.send(packet("esc-wake-1"), options=["approve", "deny"], wake=agent.wake_spec)
    # When a person decides
    first = decide(service, "esc-wake-1", "approve")
    # And a later case of the same agent is decided too (its wake comes after any repeat)
    service.send(packet("esc-wake-2"), options=["approve", "deny"], wake=agent.wake_spec)
    second = decide(service, "esc-wake-2", "deny")
    # Then the agent's worker received each wake exactly once, on its queue, with the decision
    # (in either order: the two sends are separate tasks, and a broker keeps no order
    # between them)
    wakes = {w["escalation_id"]: w for w in agent.wait_for_wakes(2)}
    assert sorted(wakes) == sorted([first, second]) and len(agent.wakes()) == 2
    assert {item["queue"] for item in agent.wakes()} == {agent.queue}
    wake = wakes[first]
    assert (wake["outcome"], wake["option"], wake["decided_by"], wake["resumes"]) == (
        "decided",
        "approve",
        "ana",
        True,
    )
    assert (wakes[second]["option"], wakes[second]["resumes"]) == ("deny", False)

    # And its outbox row says sent once (the agent can hold the wake before our worker's record
    # of the send has committed: the record is waited for)
    def recorded(_: Session) -> list[Delivery] | None:
        rows = [d for d in service.deliveries(first) if d.purpose == "wake_task"]
        return rows if rows and all(d.state != "sending" for d in rows) else None

    [delivery] = service.wait(recorded, timeout=30, what="the wake's send recorded")
    assert (delivery.state, delivery.attempts, delivery.queue) == ("sent", 1, agent.queue)
    assert "unregistered" not in agent.log().lower()


# On the shared Redis other processes' agents may consume `celery`, so the default queue is
# shown on the folder broker, which only this process's tests share, one at a time.
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_wake_naming_no_queue_goes_to_celerys_default_queue(
    service: Harness, celery_only_python: Path, tmp_path: Path, settings: Settings
) -> None:
    # Given an agent worker started the plain way, on Celery's default queue, emptied of
    # what earlier tests in this process sent there
    with service.app.connection_for_write() as connection:
        connection.default_channel.queue_purge("celery")
    url, options = broker_for_agents(settings)
    plain = start_agent_worker(
        celery_only_python,
        tmp_path / "plain",
        broker_url=url,
        broker_options=options,
        queue="celery",
    )
    try:
        # When a run names only its task, and is decided
        service.send(packet("esc-wake-3"), wake={"task": plain.task})
        case_id = decide(service, "esc-wake-3", "approve")
        # Then the wake arrives there
        [wake] = plain.wait_for_wakes(1)
        assert wake["escalation_id"] == case_id
        assert plain.wakes()[0]["queue"] == "celery"
    finally:
        plain.stop()
