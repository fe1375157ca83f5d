"""`escalate hook claude` fed Claude Code PreToolUse payloads (the documented shape) against a
live `escalate serve`: allowed at once, denied, allowed after a person's yes, defaulted."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests.api.test_serve import ESCALATE, Server, wait_for
from tests.api.test_shell_loop import agent_env
from tests.support.waiting import wait_until
from tests.workers.conftest import DESIGN, patient_text

SESSION = "sess-42"
RUN = f"claude-code-{SESSION}"  # the run a session's cases are filed under (one per serve)
TOOLS = """
tools:
  Bash:
    - {pattern: 'rm\\s+-rf|git\\s+push\\s+.*--force|(?i:drop\\s+table)'}
    - {pattern: '\\bshred\\b', severity: low}
  Write|Edit:
    - {pattern: '(^|/)\\.env$'}
  mcp__db__.*:
    - {pattern: '(?i)\\bdelete\\b', field: sql}
"""


def gated_text(*, patient: bool) -> str:
    """The test design with the tools rules above."""
    return (patient_text() if patient else DESIGN.read_text()) + TOOLS


def payload(tool: str, tool_input: dict[str, Any], use_id: str) -> str:
    """PreToolUse input as Claude Code's hooks reference documents it."""
    return json.dumps(
        {
            "session_id": SESSION,
            "transcript_path": f"/home/dev/.claude/projects/x/{SESSION}.jsonl",
            "cwd": "/home/dev/repo",
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_input": tool_input,
            "tool_use_id": use_id,
        }
    )


def start_hook(server: Server, body: str, *args: str) -> subprocess.Popen[str]:
    hook = subprocess.Popen(
        [ESCALATE, "hook", "claude", *args],
        env=agent_env(server),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert hook.stdin is not None
    hook.stdin.write(body)
    hook.stdin.close()
    hook.stdin = None  # written whole; communicate() must not flush it again
    return hook


def answer_of(hook: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = hook.communicate(timeout=90)
    assert hook.returncode == 0, err
    output: dict[str, Any] = json.loads(out)["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse"
    return output


def run_hook(server: Server, body: str, *args: str) -> dict[str, Any]:
    return answer_of(start_hook(server, body, *args))


BASH_RM = {"command": "rm -rf build/ dist/", "description": "Clean the build"}
WRITE_ENV = {"file_path": "/home/dev/repo/.env", "content": "DEBUG=1\n"}
MCP_DELETE = {"sql": "DELETE FROM users WHERE inactive"}


def test_allowed_at_once_or_by_a_person(live_patient: Server) -> None:
    # Given a design whose tools rules stop rm -rf, .env writes and DELETEs
    patient = live_patient
    client = patient.client()
    # When the hook sees harmless calls of each kind
    for tool, tool_input in [
        ("Bash", {"command": "ls -la && git push origin main"}),
        ("Write", {"file_path": "/home/dev/repo/notes.md", "content": "rm -rf"}),
        ("mcp__db__query", {"sql": "SELECT count(*) FROM users"}),
    ]:
        answer = run_hook(patient, payload(tool, tool_input, f"toolu_{tool}"))
        # Then each is allowed at once
        assert answer["permissionDecision"] == "allow", answer
    # And a risky call holding a secret is denied without echoing it, and never filed
    token = "ghp_" + "Zq8Xv2Lm4Np6Rt1Yw3Bc5Df7Gh9Jk0Ls2Qa"
    secret = {"command": f"rm -rf /srv/cache && curl -H 'Authorization: token {token}' x"}
    answer = run_hook(patient, payload("Bash", secret, "toolu_secret"))
    assert answer["permissionDecision"] == "deny"
    assert "secret" in answer["permissionDecisionReason"]
    assert token not in json.dumps(answer)
    assert client.list(run=RUN) == []
    # When the hook's own wait runs out before anyone answers
    first = run_hook(patient, payload("Bash", BASH_RM, "toolu_rm"), "--wait", "1")
    # Then the call is denied, never allowed, and says a case is open
    assert first["permissionDecision"] == "deny"
    assert "no decision yet" in first["permissionDecisionReason"]
    # When the same call comes again, with a .env write and an MCP DELETE beside it
    hooks = {
        "toolu_rm": start_hook(patient, payload("Bash", BASH_RM, "toolu_rm")),
        "toolu_env": start_hook(patient, payload("Write", WRITE_ENV, "toolu_env")),
        "toolu_db": start_hook(patient, payload("mcp__db__query", MCP_DELETE, "toolu_db")),
    }
    cases = wait_until(
        lambda: {case["packet_id"]: case["id"] for case in client.list(run=RUN)},
        lambda found: len(found) == 3,
        timeout=30,
        every=0.2,
        what="three cases",
    )
    assert cases["tool-toolu_rm"] in first["permissionDecisionReason"]  # the same case, joined
    case = client.get(cases["tool-toolu_rm"])
    assert "rm -rf build/ dist/" in case["packet"]["trigger_detail"]
    # And a person answers each
    for use_id, option in [("toolu_rm", "allow"), ("toolu_env", "deny"), ("toolu_db", "allow")]:
        wait_for(client, cases[f"tool-{use_id}"], "awaiting", "followed_up")
        client.reply(cases[f"tool-{use_id}"], option=option, sender="ana")
    # Then each hook prints that person's answer, naming who decided
    answers = {use_id: answer_of(hook) for use_id, hook in hooks.items()}
    assert answers["toolu_rm"]["permissionDecision"] == "allow"
    assert answers["toolu_env"]["permissionDecision"] == "deny"
    assert answers["toolu_db"]["permissionDecision"] == "allow"
    for use_id, said in answers.items():  # who decided, as the server authenticated them
        decided_by = client.get(cases[f"tool-{use_id}"])["decision"]["decided_by"]
        assert decided_by in said["permissionDecisionReason"]
    # And the run's resumption was acknowledged for the allowed ones
    assert client.get(cases["tool-toolu_rm"])["resumed"]["at"] is not None


@pytest.mark.impatient
def test_a_defaulted_case_denies(live: Server) -> None:
    # Given the short test design: a low case applies its default within seconds
    server = live
    # When nobody answers the hook's case
    answer = run_hook(server, payload("Bash", {"command": "shred -u key.pem"}, "toolu_shred"))
    # Then the default applies, and a default never allows
    assert answer["permissionDecision"] == "deny"
    assert "nobody decided" in answer["permissionDecisionReason"]
