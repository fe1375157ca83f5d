"""Reasons go back to the run (issue #11 item 6): what operators said while handling a case
(acknowledged, extended, reassigned: who, when, why) reaches the run with its decision, in
one field, `reasons`, through each real interface: the API, `escalate wait` as a subprocess,
the wake task in the agent's own process, the signed webhook, and DECISION.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from fastapi.testclient import TestClient

from api.app import create_app
from models.settings import Settings
from tests.api.test_serve import free_port
from tests.support.agent_venv import AgentWorker
from tests.workers.conftest import Harness
from tests.workers.test_reassign import long_design
from workflows.examples import valid_packet

pytestmark = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
ESCALATE = str(Path(sys.executable).parent / "escalate")
OPERATOR = {"Authorization": "Bearer op-token"}
HANDLED = ["acknowledged", "extended", "reassigned"]


@pytest.fixture
def settings(settings: Settings, tmp_path: Path) -> Settings:
    return settings.model_copy(update={"design": long_design(tmp_path)})


@pytest.fixture
def served(service: Harness) -> Iterator[str]:
    """The HTTP API on a real port, for the CLI: the running service's settings."""
    app = create_app(
        service.settings.model_copy(update={"api_tokens": "agent:agent-token,operator:op-token"})
    )
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    yield f"http://127.0.0.1:{server.config.port}"
    server.should_exit = True
    thread.join(timeout=10)


def test_every_way_the_run_reads_its_decision_carries_who_handled_it_and_why(
    service: Harness, api: TestClient, agent: AgentWorker, served: str, tmp_path: Path
) -> None:
    # Given a run woken by its own worker, a webhook, and a shell loop's BLOCKED.md
    blocked = tmp_path / "BLOCKED.md"
    wake = {**agent.wake_spec, "webhook": f"{service.sink.url}/run-wake",
            "blocked_file": str(blocked)}  # fmt: skip
    service.send({**valid_packet(), "packet_id": "esc-why-1"}, wake=wake)
    case = service.case("run-8842", "esc-why-1")
    line = f"- Escalation: {case.id} (answer: escalate reply {case.id} <choice>)"
    blocked.write_text(f"# Blocked\n{line}\n")  # as escalate raise --blocked-file writes it
    service.in_state(case.id, "awaiting")
    # And its `escalate wait`, as the run's shell runs it
    env = {**os.environ, "ESCALATE_URL": served, "ESCALATE_TOKEN": "agent-token"}
    waiting = subprocess.Popen(
        [ESCALATE, "wait", case.id, "--timeout", "60"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    # When operators acknowledge it, extend its deadline and reassign it, each saying why
    base = f"/v1/escalations/{case.id}"
    for path, body in (
        ("acknowledge", {"reason": "looking at the totals now"}),
        ("extend", {"minutes": 30, "reason": "the vendor answers at 9"}),
        ("reassign", {"tier": "high", "reason": "billing data: the on-call owns it"}),
    ):
        done = api.post(f"{base}/{path}", headers=OPERATOR, json=body)
        assert done.status_code == 200, done.text
    # And one of them decides
    decided = api.post(f"{base}/replies", headers=OPERATOR, json={"option": "approve"})
    assert decided.status_code == 200, decided.text
    # Then `escalate wait` prints the reasons with the decision
    out, err = waiting.communicate(timeout=90)
    assert waiting.returncode == 0, err
    printed = json.loads(out)["reasons"]
    assert [r["what"] for r in printed] == HANDLED
    assert printed[2] | {"when": None} == {
        "what": "reassigned", "who": "api:operator", "when": None,
        "why": "billing data: the on-call owns it", "from": "medium", "to": "high",
    }  # fmt: skip
    assert printed[1]["minutes"] == 30 and printed[0]["why"] == "looking at the totals now"
    # And GET /v1/escalations/{id} says the same
    assert api.get(base, headers=OPERATOR).json()["reasons"] == printed
    # And the wake task, in the agent's own process, and the webhook carry them
    [woken] = agent.wait_for_wakes(1)
    assert woken["reasons"] == printed
    service.sink.wait_for(lambda got: any(r.path == "/run-wake" for r in got))
    [posted] = service.sink.posts("/run-wake")
    assert posted.body["reasons"] == printed
    # And DECISION.md, where the shell loop reads its decision, lists them
    decision_md = service.wait(
        lambda _s: (tmp_path / "DECISION.md").exists() and (tmp_path / "DECISION.md").read_text(),
        what="DECISION.md",
    )
    section = decision_md.split("## Reasons:\n")[1].split("\n\n")[0].splitlines()
    assert [line.split(" by ")[0] for line in section] == [
        "- acknowledged",
        "- extended",
        "- reassigned from medium to high",
    ]
    assert section[2].endswith(": billing data: the on-call owns it")
