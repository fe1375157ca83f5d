"""Shell loops (SPEC §5): run.sh stops on BLOCKED.md; a real decision removes it; it resumes."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from tests.api.test_serve import ESCALATE, Server, free_port, server, wait_for
from tests.support.waiting import wait_until
from tests.workers.conftest import DESIGN
from workflows.blocked_file import render_blocked
from workflows.case import parse_options
from workflows.examples import valid_packet

__all__ = ["server"]  # the fixture, imported so pytest finds it here

REPO = Path(__file__).resolve().parents[2]
RUN_SH = REPO / "examples" / "run.sh"
HEADINGS = ["# Blocked", "## Question:", "## Context:", "## Attempted:", "## Choices:"]

# A fake agent: escalates on its first run, resumes when DECISION.md says approve.
AGENT = """#!/usr/bin/env bash
echo run >> runs.log
if [ -f DECISION.md ]; then
    if grep -qx -- '- Option: approve' DECISION.md; then
        echo resumed > resumed.marker
        touch DONE
        exit 0
    fi
    exit 3
fi
exec "$ESCALATE" raise --blocked-file --run run-loop-1 --packet-id esc-loop-1 \\
    --summary "Migrate 120 records and verify totals match source." \\
    --context "Source has 120 records, target 117; 3 ids have no target customer." \\
    --attempted "Re-ran the migration" --evidence log:logs/migrate.log \\
    --question "Skip the 3 orphan records?" \\
    --choice "approve=skip them and resume" --choice "deny=stop the run"
"""


def agent_env(server: Server) -> dict[str, str]:
    """What a run's shell has: the service URL, an agent token and the escalate command."""
    tokens = json.loads((server.home / "tokens.json").read_text())
    return {
        **server.env,
        "ESCALATE_URL": server.url,
        "ESCALATE_TOKEN": tokens["agent"],
        "ESCALATE": ESCALATE,
    }


def run_loop(work: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(RUN_SH), "./agent.sh"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def gone(path: Path, within: float = 30) -> None:
    wait_until(lambda: not path.exists(), timeout=within, every=0.1, what=f"{path} to be removed")


def case_id_in(blocked: Path) -> str:
    found = re.search(r"^- Escalation: ([0-9a-f]+) ", blocked.read_text(), flags=re.M)
    assert found, blocked.read_text()
    return found.group(1)


def test_the_loop_stops_on_a_real_escalation_and_resumes_after_the_decision(
    live_patient: Server, tmp_path: Path
) -> None:
    # Given a running service and a run folder with an agent that escalates on its first run
    patient = live_patient
    work = tmp_path / "run"
    work.mkdir()
    (work / "agent.sh").write_text(AGENT, encoding="utf-8")
    (work / "agent.sh").chmod(0o755)
    env = agent_env(patient)

    # When the loop runs: the agent raises with --blocked-file
    first = run_loop(work, env)

    # Then the loop exits 2 with BLOCKED.md in place, naming the filed case
    assert first.returncode == 2, first.stderr
    blocked = work / "BLOCKED.md"
    text = blocked.read_text()
    assert [line for line in text.splitlines() if line.startswith("#")] == HEADINGS
    assert "- A) approve — skip them and resume" in text.splitlines()
    escalation_id = case_id_in(blocked)
    client = patient.client()
    case = client.get(escalation_id)
    assert case["wake"] == {"blocked_file": str(blocked)}

    # And while it exists the loop stops without running the agent again
    again = run_loop(work, env)
    assert again.returncode == 2
    assert "blocked" in again.stderr
    assert (work / "runs.log").read_text().splitlines() == ["run"]

    # When the operator approves
    wait_for(client, escalation_id, "awaiting", "followed_up")
    assert client.reply(escalation_id, option="approve", sender="ana")["outcome"] == "decided"

    # Then the service removes BLOCKED.md and leaves the decision where the loop reads it
    gone(blocked)
    decision = (work / "DECISION.md").read_text()
    lines = decision.splitlines()
    assert lines[:4] == ["# Decision", "", "## Question:", "Skip the 3 orphan records?"]
    assert f"- Case: {escalation_id} (run run-loop-1, packet esc-loop-1)" in lines
    assert "- Option: approve" in lines
    closed = client.get(escalation_id)
    who = closed["decision"]["decided_by"]
    assert who == "api:admin"  # the token that answered; the typed "ana" is only a note
    assert f"- Decided by: {who} via api" in lines
    assert "- Outcome: decided" in lines
    assert f"- When: {closed['closed_at']}" in lines
    (log_line,) = (work / "decisions.log").read_text().splitlines()
    assert log_line.split("\t") == [closed["closed_at"], escalation_id, "approve", "decided", who]

    # And the next run of the loop resumes the agent, which reads the decision
    resumed = run_loop(work, env)
    assert resumed.returncode == 0, resumed.stderr
    assert (work / "resumed.marker").read_text() == "resumed\n"
    assert (work / "runs.log").read_text().splitlines() == ["run", "run"]

    # And `wait --unblock` on the same case changes nothing: same DECISION.md, one log line
    waited = subprocess.run(
        [ESCALATE, "wait", escalation_id, "--unblock"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert waited.returncode == 0, waited.stderr
    assert (work / "DECISION.md").read_text() == decision
    assert (work / "decisions.log").read_text().splitlines() == [log_line]

    # And raising the same packet again, now closed, stops this iteration but blocks nothing:
    # the decision is already known, so BLOCKED.md is replaced by it at once
    (work / "DONE").unlink()
    (work / "DECISION.md").unlink()
    repeat = run_loop(work, env)
    assert repeat.returncode == 2, repeat.stderr
    assert not blocked.exists()
    assert (work / "DECISION.md").read_text() == decision
    assert (work / "decisions.log").read_text().splitlines() == [log_line]


def test_wait_unblock_does_it_when_the_service_cannot_reach_the_runs_disk(
    live_patient: Server, tmp_path: Path, run_id: str
) -> None:
    # Given a case the service does not know a BLOCKED.md for, and the run's BLOCKED.md
    patient = live_patient
    client = patient.client()
    created = client.raise_({**valid_packet(), "run_id": run_id, "packet_id": "esc-loop-remote"})
    blocked = tmp_path / "BLOCKED.md"
    blocked.write_text(
        render_blocked(valid_packet(), parse_options(None), escalation_id=created["id"]), "utf-8"
    )
    # When `escalate wait --unblock` runs on the run's machine and the operator denies
    waiting = subprocess.Popen(
        [ESCALATE, "wait", created["id"], "--unblock", "--blocked-file", str(blocked)],
        env=agent_env(patient),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(client, created["id"], "awaiting", "followed_up")
    client.reply(created["id"], option="deny", sender="ana")
    out, err = waiting.communicate(timeout=60)
    # Then it exits 3 (stop) with the decision on disk and BLOCKED.md gone
    assert waiting.returncode == 3, err
    assert json.loads(out)["outcome"] == "decided" and json.loads(out)["resumes"] is False
    assert not blocked.exists()
    decision = (tmp_path / "DECISION.md").read_text().splitlines()
    assert "- Option: deny" in decision and "- Outcome: decided" in decision
    (line,) = (tmp_path / "decisions.log").read_text().splitlines()
    assert line.split("\t")[1:4] == [created["id"], "deny", "decided"]
    # And the wait, a process of the run's own, acknowledged the wake
    assert client.get(created["id"])["resumed"]["via"] == "ack"
    assert line.split("\t")[4] == client.get(created["id"])["decision"]["decided_by"]


def test_a_refused_packet_still_blocks_the_loop_and_says_nothing_was_sent(
    live: Server, tmp_path: Path, run_id: str
) -> None:
    # Given a packet the service refuses (no evidence)
    server = live
    packet = tmp_path / "packet.json"
    refused = {**valid_packet(), "run_id": run_id, "evidence": []}
    packet.write_text(json.dumps(refused), encoding="utf-8")
    # When the run raises it with --blocked-file
    result = subprocess.run(
        [ESCALATE, "raise", "--packet", str(packet), "--blocked-file"],
        cwd=tmp_path,
        env=agent_env(server),
        capture_output=True,
        text=True,
        timeout=60,
    )
    # Then it exits 2, the error is on stderr, and BLOCKED.md says the packet was refused
    assert result.returncode == 2
    assert "error: the service refused the packet, nothing was sent: " in result.stderr
    assert "evidence" in result.stderr
    text = (tmp_path / "BLOCKED.md").read_text()
    assert [line for line in text.splitlines() if line.startswith("#")] == HEADINGS
    assert "- Escalation: NOT FILED, nobody may have been asked: the service refused" in text
    assert server.client().list(run=run_id) == []


def test_with_the_service_down_the_loop_still_stops(tmp_path: Path) -> None:
    # Given no service at the URL the run uses
    work = tmp_path / "run"
    work.mkdir()
    (work / "agent.sh").write_text(AGENT, encoding="utf-8")
    (work / "agent.sh").chmod(0o755)
    env = {
        **os.environ,
        "ESCALATE_HOME": str(tmp_path / "home"),
        "ESCALATE_DESIGN": str(DESIGN),
        "ESCALATE_URL": f"http://127.0.0.1:{free_port()}",
        "ESCALATE_TOKEN": "agent-t",
        "ESCALATE": ESCALATE,
    }
    # When the loop runs
    first = run_loop(work, env)
    # Then it exits 2, says why on stderr, and BLOCKED.md holds the question and the failure
    assert first.returncode == 2
    assert "error: the service could not be reached" in first.stderr
    text = (work / "BLOCKED.md").read_text()
    assert "Skip the 3 orphan records?" in text.splitlines()
    assert "NOT FILED, nobody may have been asked: the service could not be reached" in text
    # And the loop stays stopped until a human removes the file
    assert run_loop(work, env).returncode == 2
    assert (work / "runs.log").read_text().splitlines() == ["run"]
