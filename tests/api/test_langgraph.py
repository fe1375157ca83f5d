"""The LangGraph adapter, across processes: a graph's interrupt() raised as an escalation in one
process, decided through the API, resumed in a second process from the SQLite checkpointer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.api.test_serve import Server, wait_for
from tests.api.test_shell_loop import agent_env

REPO = Path(__file__).resolve().parents[2]


def step(server: Server, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.api.langgraph_run", *args],
        cwd=REPO,
        env=agent_env(server),
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_an_interrupt_is_decided_and_resumed_in_another_process(
    live_patient: Server, tmp_path: Path
) -> None:
    # Given a graph that stopped at interrupt() and filed it as an escalation
    patient = live_patient
    db = str(tmp_path / "checkpoints.sqlite")
    case_id = step(patient, "raise", db, "thread-1")["id"]
    admin = patient.client()
    case = wait_for(admin, case_id, "awaiting", "followed_up")
    assert [o["label"] for o in case["options"]] == ["Skip the 3 records", "Stop now"]
    # When the interrupt is raised again (a restarted process), it joins the same case
    assert step(patient, "raise", db, "thread-1")["id"] == case_id
    # And a person decides through the API
    admin.reply(case_id, option="Skip the 3 records", sender="ana")
    # Then a second process resumes the graph with the decision, from the checkpointer
    resumed = step(patient, "resume", db, "thread-1", case_id)
    assert resumed["resumed"] and resumed["outcome"] == "decided", resumed
    assert resumed["output"]["done"] == "decided:Skip the 3 records:True"
    assert resumed["output"]["counted"] == 1  # nothing before the interrupt ran again
    assert admin.get(case_id)["resumed"]["at"] is not None
    # And resuming again replays nothing
    again = step(patient, "resume", db, "thread-1", case_id)
    assert not again["resumed"] and again["output"]["done"].startswith("decided")


def test_an_interrupt_value_becomes_one_packet_per_interrupt() -> None:
    from api.langgraph_adapter import packet_for_interrupt

    # Given a bare question and the graph's defaults
    packet, options, snapshot = packet_for_interrupt(
        "Skip the 3 orphan records?",
        thread_id="t-9",
        interrupt_id="abc",
        defaults={"recipient": "data-ops", "run_id": "run-7", "packet_id": "ignored"},
    )
    # Then the question is the requested action, defaults fill in, the id is the interrupt's
    assert packet == {
        "run_id": "run-7",
        "recipient": "data-ops",
        "requested_action": "Skip the 3 orphan records?",
        "packet_id": "lg-t-9-abc",
    }
    assert (options, snapshot) == (None, None)
    # And a packet-shaped value keeps its fields, options and snapshot
    packet, options, snapshot = packet_for_interrupt(
        {"severity": "high", "options": ["Go"], "snapshot": {"rows": 1}},
        thread_id="t",
        interrupt_id="i",
    )
    assert packet["run_id"] == "langgraph-t" and packet["severity"] == "high"
    assert (options, snapshot) == (["Go"], {"rows": 1})
