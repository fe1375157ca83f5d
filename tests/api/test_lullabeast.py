"""lullabeast's pipeline as it runs (SPEC §6): its own state folder in, its own command files out.

The folder is written the way lullabeast's orchestrator writes it (each file whole, through a
temporary file renamed into .autodev/pipeline/), with its own key names: no phase in
phase_state.json, the phase in current_phase.json (phase_number, raw_id, detail), the failure
in failure_context.json, and its correlation token in phase_state.json.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

import httpx

from tests.api.test_serve import ESCALATE, Server, wait_for
from tests.api.test_shell_loop import agent_env
from tests.support.sink import HttpSink
from tests.support.waiting import wait_until

TOKEN = "e1.ab12cd"  # `{queue entry id}.{6 hex}`, as the orchestrator makes it


def write_like_the_orchestrator(folder: Path, name: str, content: dict[str, Any]) -> None:
    """mkstemp in the folder, dump, os.replace: how lullabeast writes every state file."""
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=name.split(".")[0] + "_")
    with os.fdopen(fd, "w") as handle:
        json.dump(content, handle, indent=2)
    os.replace(temporary, folder / name)


def lullabeast_project(root: Path, *, token: str | None = TOKEN) -> Path:
    art = root / "proj" / ".autodev" / "pipeline"
    art.mkdir(parents=True)
    phase_state: dict[str, Any] = {
        "planner_retries": 0,
        "executor_retries": 3,
        "reviewer_retries": 0,
        "reviewer_rejected": False,
        "escalation_resets": 0,
        "nuclear_resets": 0,
        "escalation_trigger_reason": "Executor retries exhausted (3/3)",
        "last_error_code": "ERR_TESTS_FAILED",
    }
    if token:
        phase_state |= {"escalation_reply_token": token, "escalation_reply_token_at": "now"}
    write_like_the_orchestrator(art, "phase_state.json", phase_state)
    write_like_the_orchestrator(
        art,
        "current_phase.json",
        {
            "phase_number": 4,
            "raw_id": "CORE-4",
            "detail": "Add auth middleware",
            "category": "CORE",
            "exit_criteria": "All routes require a session",
        },
    )
    write_like_the_orchestrator(
        art,
        "failure_context.json",
        {
            "timestamp": "2026-12-01T09:00:00+00:00",
            "phase_raw_id": "CORE-4",
            "failing_agent": "executor",
            "attempt_number": 4,
            "gate_error_codes": ["ERR_TESTS_FAILED"],
            "agent_status": "failed",
            "agent_failure_reason": "session store import cycle",
            "agent_troubleshooting_attempts": [],
            "blocking_issues": [],
            "tests_written": ["tests/test_auth.py"],
            "tests_passing": False,
            "file_manifest": ["app/auth.py", "app/session.py"],
            "files_present_on_disk": ["app/auth.py", "tests/test_auth.py"],
            "planner_retries_at_failure": 0,
            "executor_retries_at_failure": 3,
            "reviewer_retries_at_failure": 0,
        },
    )
    write_like_the_orchestrator(
        art,
        "executor_output.json",
        {"status": "failed", "failure_reason": "session store import cycle"},
    )
    return art


def raise_from_elsewhere(server: Server, art: Path, where: Path) -> dict[str, Any]:
    """`escalate pipeline raise` from another folder, with no --command-file."""
    where.mkdir(exist_ok=True)
    filed = subprocess.run(
        [ESCALATE, "pipeline", "raise", "--state-dir", str(art), "--pipeline-id", "shop"],
        cwd=where, env=agent_env(server), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert filed.returncode == 0, filed.stderr
    case: dict[str, Any] = json.loads(filed.stdout)
    return case


def test_a_lullabeast_folder_escalates_and_the_reply_lands_as_its_command_files(
    patient: Server, sink: HttpSink, tmp_path: Path
) -> None:
    # Given a lullabeast project whose executor ran out of retries
    patient.start()
    art = lullabeast_project(tmp_path)
    # When the pipeline escalates from another folder
    case = raise_from_elsewhere(patient, art, tmp_path / "elsewhere")
    assert case["created"] and case["phase"] == "4" and case["raw_id"] == "CORE-4"
    assert case["labels"]["RESET_EXECUTION"] == "Reset Execution"
    assert "reply_token" not in case  # the code is a key: never shown back
    assert json.loads((art / "escalation_summary.json").read_text())["summary"]
    # Then the operator's notification names every fact lullabeast wrote, and its token
    sink.wait_for(lambda got: any("CORE-4" in str(r.body) for r in got))
    message = next(str(r.body["message"]) for r in sink.posts() if "CORE-4" in str(r.body))
    for expected in [
        "Phase: 4 [CORE-4] — Add auth middleware (category: CORE)",  # 1 which phase
        "Failed: executor (attempt 4) — Executor retries exhausted (3/3)",  # 2 which part
        "Gate error codes: ERR_TESTS_FAILED",  # 3 what the failure was
        "Agent failure_reason, executor: session store import cycle",
        "Tests: 1 written (tests/test_auth.py); NOT passing",  # 4 diagnostic reads
        "Files: 2 in file_manifest, 2 on disk; in the manifest but not on disk: app/session.py",
        "- RESET_EXECUTION — (Reset Execution) Plan fine",  # 5 commands with their UI label
        "- RESET_REVIEWER — (Revert to Reviewer)",
        f"code {TOKEN}",  # 6 how to answer: the pipeline's own token is the reply code
    ]:
        assert expected in message, expected
    assert "SKIP" not in message and "NUCLEAR" not in message

    # And an orchestrator polling for the sentinel always finds the whole command before it
    seen: list[str] = []

    def orchestrator() -> None:
        wait_until(
            (art / "escalation_output.done").exists, timeout=60, every=0.01, what="the sentinel"
        )
        seen.append((art / "escalation_output.json").read_text())

    polling = threading.Thread(target=orchestrator)
    polling.start()
    wait_for(patient.client(), case["id"], "awaiting", "followed_up")
    operator = json.loads((patient.home / "tokens.json").read_text())["operator"]
    # When the operator replies on a channel starting with the pipeline's own token
    reply = httpx.post(
        f"{patient.url}/v1/inbound/text",
        headers={"Authorization": f"Bearer {operator}"},
        json={"text": f"{TOKEN} revert to reviewer", "channel": "signal", "sender": "ana"},
        timeout=30,
    )
    assert reply.status_code == 200, reply.text
    polling.join(timeout=60)
    # Then escalation_output.json holds the command, and escalation_output.done came after it
    [written] = seen
    command = json.loads(written)
    assert command["command"] == "RESET_REVIEWER" and command["source"] == "escalate"
    assert command["timestamp"] and command["phase"] == "4"
    assert (art / "escalation_output.json").stat().st_mtime_ns <= (
        art / "escalation_output.done"
    ).stat().st_mtime_ns
    assert (art / "escalation_output.done").read_text() == ""
    assert not list(art.glob(".escalation_output*"))  # no temporary file left beside them

    # And a folder with only phase_state.json (no token, no phase) still escalates, saying so
    bare = tmp_path / "bare"
    bare.mkdir()
    write_like_the_orchestrator(
        bare, "phase_state.json", {"escalation_resets": 0, "escalation_trigger_reason": "gate"}
    )
    alone = raise_from_elsewhere(patient, bare, tmp_path / "elsewhere")
    assert alone["created"] and alone["phase"] == "unknown"
    assert any("counted as 'unknown'" in note for note in alone["notes"])
    sink.wait_for(lambda got: any(alone["id"] in str(r.body) for r in got))
