"""kandev, end to end (issue #15): a task blocked by "Decision needed" cards added one by one
is woken once, after the last, the way a kandev agent reads it (examples/kandev_wake.py)."""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from models.settings import Settings
from tests.support.agent_venv import clean_env
from tests.support.processes import stop
from tests.support.waiting import wait_until
from tests.workers.conftest import Harness
from workflows.examples import valid_packet

ROOT = Path(__file__).resolve().parents[2]
AGENT = {"Authorization": "Bearer agent-token"}
OPERATOR = {"Authorization": "Bearer op-token"}
# What a kandev agent does on waking (kandev's skill: read KANDEV_WAKE_REASON, parse
# KANDEV_WAKE_PAYLOAD_JSON), as a stand-in agent: it writes down what it understood.
KANDEV_AGENT = """\
import json, os, sys
blockers = json.loads(os.environ["KANDEV_WAKE_PAYLOAD_JSON"])["blockers"]
seen = {
    "task": os.environ["KANDEV_TASK_ID"],
    "reason": os.environ["KANDEV_WAKE_REASON"],
    "prompt": "Resolved blockers: " + ", ".join(b["title"] for b in blockers),
    "decisions": [[b["decision"]["option"], b["decision"]["decided_by"]] for b in blockers],
    "reasons": [[r["what"], r["why"]] for b in blockers for r in b["decision"]["reasons"]],
}
with open(sys.argv[1], "a") as out:
    out.write(json.dumps(seen) + "\\n")
sys.exit(int(sys.argv[2]))  # an agent that fails leaves its wake unacknowledged
"""


@pytest.fixture
def agent_exit() -> int:
    """The stand-in agent's exit status: 0, it took the decisions."""
    return 0


@pytest.fixture
def ack_wait() -> float:
    """Seconds before an unacknowledged wake is sent again: longer than any test here."""
    return 120.0


@pytest.fixture
def settings(settings: Settings, ack_wait: float) -> Settings:
    return settings.model_copy(update={"wake_ack_wait": ack_wait, "wake_redeliveries": 2})


@pytest.fixture
def kandev_worker(
    celery_only_python: Path, settings: Settings, tmp_path: Path, agent_exit: int
) -> Iterator[tuple[str, Path]]:
    """kandev's wake worker, from a folder with only the example and the stand-in agent."""
    folder = tmp_path / "kandev"
    folder.mkdir()
    shutil.copy(ROOT / "examples" / "kandev_wake.py", folder)
    (folder / "agent.py").write_text(KANDEV_AGENT, encoding="utf-8")
    seen = folder / "seen.jsonl"
    queue = f"kandev-{secrets.token_hex(4)}"
    env = clean_env(
        BROKER_URL=settings.resolved_broker_url,
        KANDEV_AGENT=f"{celery_only_python} {folder / 'agent.py'} {seen} {agent_exit}",
    )
    with (folder / "worker.log").open("wb") as log:
        worker = subprocess.Popen(
            [
                str(celery_only_python),
                *("-m", "celery", "-A", "kandev_wake", "worker", "-Q", queue),
                *("--pool", "solo", "--loglevel", "warning"),
                *("--without-mingle", "--without-gossip", "--without-heartbeat"),
            ],
            cwd=folder,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    yield queue, seen
    stop(worker, grace=0)  # the test has read what it saw


def raise_decision_needed(api: TestClient, question: str, point: str) -> str:
    """The agent escalates one question (kandev: a 'Decision needed: <question>' task)."""
    packet: dict[str, Any] = {
        **valid_packet(),
        "run_id": "kandev-KAN-42",
        "packet_id": f"esc-{secrets.token_hex(3)}",
        "task_summary": "Implement OAuth login.",
        "blocked_on": point,
        "requested_action": question,
    }
    response = api.post("/v1/escalations", headers=AGENT, json={"packet": packet})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def decide(
    api: TestClient, service: Harness, escalation_id: str, option: str, who: str, why: str = ""
) -> None:
    """A person marks the decision task done: an answer through the admin API (after an
    acknowledgement saying `why`, when given)."""
    service.in_state(escalation_id, "awaiting", "followed_up")
    if why:
        taken = api.post(
            f"/v1/escalations/{escalation_id}/acknowledge", headers=OPERATOR, json={"reason": why}
        )
        assert taken.status_code == 200, taken.text
    answered = api.post(
        f"/v1/escalations/{escalation_id}/replies",
        headers=OPERATOR,
        json={"option": option, "sender": who},
    )
    assert answered.status_code == 200, answered.text
    service.in_state(escalation_id, "closed")


@pytest.mark.parametrize("backend", ["redis-postgres"], indirect=True)
def test_a_kandev_task_blocked_one_question_at_a_time_wakes_once_with_every_decision(
    service: Harness, api: TestClient, kandev_worker: tuple[str, Path]
) -> None:
    queue, seen = kandev_worker
    wake = {"task": "kandev.wake", "queue": queue}
    # Given the agent of KAN-42 blocked on one question, linked as the task's blocker
    providers = raise_decision_needed(
        api, "Which OAuth providers should we support?", "The provider list for OAuth login."
    )
    first = api.post(
        "/v1/tasks/KAN-42/blockers", headers=AGENT, json={"escalations": [providers], "wake": wake}
    )
    assert first.status_code == 201
    # And, later, on a second one, added to the same task
    sessions = raise_decision_needed(
        api, "Should sessions last 7 or 30 days?", "The session lifetime for OAuth login."
    )
    second = api.post(
        "/v1/tasks/KAN-42/blockers", headers=AGENT, json={"escalations": [sessions], "wake": wake}
    )
    assert second.status_code == 201
    assert [c["title"] for c in second.json()["blockers"]] == [
        "Decision needed: Which OAuth providers should we support?",
        "Decision needed: Should sessions last 7 or 30 days?",
    ]
    # When the person resolves the first, then the second
    decide(api, service, providers, "approve", "ana", why="asking the product owner")
    decide(api, service, sessions, "deny", "bo")
    # Then the agent runs once, woken for task_blockers_resolved, with both titles and decisions
    lines = wait_until(
        lambda: seen.read_text().splitlines() if seen.exists() else [],
        timeout=30,
        what="the kandev agent to run",
    )
    [woken] = [json.loads(line) for line in lines]
    assert woken == {
        "task": "KAN-42",
        "reason": "task_blockers_resolved",
        "prompt": "Resolved blockers: Decision needed: Which OAuth providers should we support?, "
        "Decision needed: Should sessions last 7 or 30 days?",
        # who decided, as the server authenticated them (typed names are notes)
        "decisions": [["approve", "api:operator"], ["deny", "api:operator"]],
        # what the operators said while handling them comes back with each decision
        "reasons": [["acknowledged", "asking the product owner"]],
    }
    [task_set] = api.get("/v1/tasks/KAN-42/blockers", headers=AGENT).json()["waits"]
    assert task_set["woken_at"] is not None
    # And the wake said how to acknowledge it, which the worker did once the agent had run
    [task_set] = wait_until(
        lambda: [
            w
            for w in api.get("/v1/tasks/KAN-42/blockers", headers=AGENT).json()["waits"]
            if w["resumed_at"]
        ],
        timeout=30,
        what="the task's acknowledgement",
    )
    assert task_set["wake_id"].startswith("task-") and task_set["redeliveries"] == 0
    for blocker in (providers, sessions):  # the task's ack stands for every blocker it carried
        case = api.get(f"/v1/escalations/{blocker}", headers=AGENT).json()
        assert case["resumed"]["via"] == "ack"
        [resumed] = service.events(blocker, "resumed")
        assert resumed.detail["task"] == "KAN-42"
    assert api.get("/v1/stats", headers=OPERATOR).json()["decided_not_resumed"] == []


@pytest.mark.parametrize(("agent_exit", "ack_wait"), [(1, 0.4)])
@pytest.mark.parametrize("backend", ["redis-postgres"], indirect=True)
def test_a_task_wake_nobody_acknowledges_is_sent_again_then_its_blockers_show_not_resumed(
    service: Harness, api: TestClient, kandev_worker: tuple[str, Path]
) -> None:
    queue, seen = kandev_worker
    wake = {"task": "kandev.wake", "queue": queue}
    # Given a task blocked on one question whose agent fails every time it is woken
    question = raise_decision_needed(api, "Which OAuth providers?", "The provider list.")
    linked = api.post(
        "/v1/tasks/KAN-43/blockers", headers=AGENT, json={"escalations": [question], "wake": wake}
    )
    assert linked.status_code == 201
    # When the question is decided and the task's wake is never acknowledged
    decide(api, service, question, "approve", "ana")
    service.wait(lambda _s: service.events(question, "not_resumed"), timeout=40, what="the flag")
    # Then the wake was sent three times (once, then twice again), each carrying the decision
    lines = wait_until(
        lambda: (
            seen.exists() and (found := seen.read_text().splitlines()) and len(found) >= 3 and found
        ),
        timeout=20,
        what="three runs of the agent",
    )
    assert len(lines) == 3
    assert len(service.events(question, "wake_redelivered")) == 2
    # And the case reads decided, not resumed, where a person looks
    assert api.get("/v1/stats", headers=OPERATOR).json()["decided_not_resumed"] == [question]
    [task_set] = api.get("/v1/tasks/KAN-43/blockers", headers=AGENT).json()["waits"]
    assert task_set["resumed_at"] is None and task_set["redeliveries"] == 2
