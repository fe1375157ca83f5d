"""JobClaw's request files (SPEC §7) against a real serve: requests/<request_id>.json in the
seed's own fields, and the file and its escalation agreeing both ways."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.api.test_serve import ESCALATE, Server, wait_for
from tests.api.test_shell_loop import agent_env
from tests.support.waiting import wait_until

SEED_FIELDS = [
    "request_id", "created_at", "situation", "policy", "prompt", "options",
    "timeout_default", "context_refs", "status",
]  # fmt: skip
CAPTCHA = [
    "--situation", "Captcha at Workday submit for Mercury. The screenshot is attached.",
    "--policy", "Escalate any irreversible action; auto-proceed on captcha if MFA backup "
    "is configured",
    "--trigger", "blocked",
    "--option", "Solve captcha=solve", "--option", "Submit anyway=submit",
    "--option", "Withdraw=withdraw",
    "--context-ref", "shots/mercury-captcha.png",
]  # fmt: skip


def compose(server: Server, job: Path, request_id: str, run: str) -> dict[str, Any]:
    """`escalate request compose` as JobClaw runs it, from its own folder."""
    job.mkdir(exist_ok=True)
    env = {**agent_env(server)}
    composed = subprocess.run(
        [ESCALATE, "request", "compose", *CAPTCHA, "--request-id", request_id, "--run", run,
         "--design", server.env["ESCALATE_DESIGN"]],
        cwd=job, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert composed.returncode == 0, composed.stderr
    answer: dict[str, Any] = json.loads(composed.stdout)
    return answer


def request_file(job: Path, request_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((job / "requests" / f"{request_id}.json").read_text())
    return data


def settled(job: Path, request_id: str, status: str) -> dict[str, Any]:
    return wait_until(
        lambda: request_file(job, request_id),
        lambda data: data["status"] == status,
        timeout=30,
        every=0.1,
        what=f"request {request_id} {status}",
    )


def test_the_request_file_and_its_escalation_agree_both_ways(
    live_patient: Server, tmp_path: Path, run_id: str
) -> None:
    # Given JobClaw composing a request with its own id and its own imperative labels
    patient = live_patient
    job = tmp_path / "jobclaw"
    answer = compose(patient, job, "0a1b2c3d4e5f", run_id)
    assert answer["request_id"] == "0a1b2c3d4e5f" and answer["escalation_id"]
    data = request_file(job, "0a1b2c3d4e5f")
    # Then the file holds the seed's fields in its order, this service's kept apart
    assert list(data) == [*SEED_FIELDS, "escalate"]
    assert data["options"] == [
        {"label": "Solve captcha", "value": "solve"},
        {"label": "Submit anyway", "value": "submit"},
        {"label": "Withdraw", "value": "withdraw"},
    ]
    assert data["prompt"] == (
        "Captcha at Workday submit for Mercury: Solve captcha, Submit anyway or Withdraw?"
    )
    assert data["escalate"]["escalation_id"] == answer["escalation_id"]
    # When the operator decides on the service (API, as the dashboard and channels do)
    client = patient.client()
    wait_for(client, answer["escalation_id"], "awaiting", "followed_up")
    client.reply(answer["escalation_id"], option="Solve captcha", sender="ana")
    # Then the request file is resolved with that decision
    data = settled(job, "0a1b2c3d4e5f", "resolved")
    decision = data["escalate"]["decision"]
    assert (decision["request_id"], decision["option"], decision["value"]) == (
        "0a1b2c3d4e5f",
        "Solve captcha",
        "solve",
    )
    assert decision["matched_by"] == "escalation"

    # Given a second filed request
    answer = compose(patient, job, "1b2c3d4e5f60", run_id)
    wait_for(client, answer["escalation_id"], "awaiting", "followed_up")
    # When JobClaw parses the human's reply (its HITL relay holds the operator token)
    operator = json.loads((patient.home / "tokens.json").read_text())["operator"]
    parsed = subprocess.run(
        [ESCALATE, "request", "parse", "--request-id", "1b2c3d4e5f60", "--reply", "withdraw"],
        cwd=job, env={**agent_env(patient), "ESCALATE_TOKEN": operator},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert parsed.returncode == 0, parsed.stderr
    out = json.loads(parsed.stdout)
    assert (out["option"], out["status"]) == ("Withdraw", "resolved")
    assert out["escalation"]["outcome"] == "decided"
    # Then the case is decided with the same option: nobody follows up, no default applies
    closed = wait_for(client, answer["escalation_id"], "closed")
    assert closed["outcome"] == "decided" and closed["decision"]["option"] == "Withdraw"
    assert request_file(job, "1b2c3d4e5f60")["status"] == "resolved"


def test_a_timeout_marks_the_request_expired_with_its_default(
    live: Server, tmp_path: Path, run_id: str
) -> None:
    # Given a request on a design whose medium timeout is seconds long, and nobody answering
    server = live
    job = tmp_path / "jobclaw"
    answer = compose(server, job, "2c3d4e5f6071", run_id)
    closed = wait_for(server.client(), answer["escalation_id"], "closed")
    assert closed["outcome"] == "defaulted"
    # Then the file says expired; its timeout_default names what JobClaw does now
    data = settled(job, "2c3d4e5f6071", "expired")
    assert data["timeout_default"]["action"] == "queue"
    assert data["escalate"]["decision"] is None
