"""An orchestrator's habits (SPEC §6): `escalate pipeline raise --wait` against a real serve."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import typer

from api.pipeline_cli import _wait_for_command
from tests.api.test_serve import ESCALATE, Server, wait_for
from tests.api.test_shell_loop import agent_env
from tests.support.waiting import wait_until


def raise_and_wait(state_dir: Path, command_file: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [ESCALATE, "pipeline", "raise", "--state-dir", str(state_dir), "--pipeline-id",
         "checkout", "--command-file", str(command_file), "--wait", "--timeout", "60"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def filed_id(process: subprocess.Popen) -> str:
    """The case id from the JSON the command prints first (it spans several lines)."""
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        lines.append(line)
        if line == "}\n":
            break
    return str(json.loads("".join(lines))["id"])


def test_an_orchestrator_raises_from_its_folder_and_gets_the_operators_command(
    live_patient: Server, tmp_path: Path
) -> None:
    patient = live_patient
    state = tmp_path / "pipeline"
    state.mkdir()
    (state / "phase_state.json").write_text(
        json.dumps(
            {"phase": 2, "reviewer_retries": 3, "escalation_resets": 1,
             "escalation_trigger_reason": "reviewer retries exhausted"}
        )
    )  # fmt: skip
    (state / "current_phase.json").write_text('{"phase": 2, "description": "Refund endpoint"}')
    command_file = tmp_path / "command.json"
    env = agent_env(patient)

    waiting = raise_and_wait(state, command_file, env)
    escalation_id = filed_id(waiting)
    summary = json.loads((state / "escalation_summary.json").read_text())
    assert summary["recommended_action"].startswith("RESET_REVIEWER:")
    client = patient.client()
    case = wait_for(client, escalation_id, "awaiting", "followed_up")
    assert case["pipeline"]["offered"] == [
        "RESET_EXECUTION", "RESET_PHASE", "RESET_REVIEWER", "PROCEED", "STOP"
    ]  # fmt: skip
    assert case["pipeline"]["note"] == "2 of 3 resets left in this phase."

    # The operator answers from a terminal with the alias, which is never offered
    operator = json.loads((patient.home / "tokens.json").read_text())["operator"]
    reply = subprocess.run(
        [ESCALATE, "reply", escalation_id, "restart", "phase"],
        env={**env, "ESCALATE_TOKEN": operator}, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert reply.returncode == 0, reply.stderr

    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, err
    assert json.loads(out)["command"] == "RESET_PHASE"
    wait_until(command_file.exists, timeout=30, every=0.1, what="the service to write the command")
    assert json.loads(command_file.read_text())["command"] == "RESET_PHASE"

    counted = subprocess.run(
        [ESCALATE, "pipeline", "counters", "--pipeline-id", "checkout", "--phase", "2"],
        env=env, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert counted.returncode == 0, counted.stderr
    assert json.loads(counted.stdout)["resets"] == 2


def test_a_folder_without_phase_state_is_refused_with_the_file_named(
    live: Server, tmp_path: Path
) -> None:
    refused = subprocess.run(
        [ESCALATE, "pipeline", "raise", "--state-dir", str(tmp_path)],
        env=agent_env(live), capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert refused.returncode == 1
    assert "phase_state.json: required, but not in the state folder" in refused.stderr


class ParkedClient:
    """A service whose case was decided, then parked before its close entry."""

    def wait(self, escalation_id: str, timeout: float | None = None) -> dict[str, object]:
        decision = {"option": "RESET_PHASE", "value": "RESET_PHASE"}
        return {"id": escalation_id, "state": "dead_letter", "decision": decision,
                "pipeline": {"command": "RESET_PHASE"}}  # fmt: skip


def test_wait_runs_no_command_from_a_case_that_never_closed() -> None:
    with pytest.raises(typer.Exit) as ended:
        _wait_for_command(ParkedClient(), "c1", timeout=1)
    assert ended.value.exit_code == 6  # no decision: parked
