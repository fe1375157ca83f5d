"""loopkit's loop as it runs (SPEC §5): run.sh in the repo, the CLI finding the service from there.

loopkit's run.sh stops while BLOCKED.md exists, has the agent read PROMPT.md and
IMPLEMENTATION_PLAN.md each turn, and ends when the plan says `STATUS: done`. The runner
below keeps that shape, with a script in the agent's place; the repo is a folder the service
was never started in, and the run's shell has no ESCALATE_URL or ESCALATE_TOKEN: only what
`escalate login` saved in the user's config folder.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from tests.api.test_serve import ESCALATE, Server, wait_for
from tests.support.waiting import wait_until

RUN_SH = """#!/usr/bin/env bash
# loopkit's runner shape: fresh process each turn, state on disk
set -u
for turn in 1 2 3; do
  if [ -f BLOCKED.md ]; then
    echo "loop stopped — see BLOCKED.md for the question"
    exit 2
  fi
  ./agent.sh || exit $?
  grep -q "^STATUS: done$" IMPLEMENTATION_PLAN.md && { echo "done"; exit 0; }
done
exit 1
"""

# The agent reads the plan: a recorded decision there lets it finish, else it escalates.
AGENT = """#!/usr/bin/env bash
if grep -q -- '^- Decision: sqlite' IMPLEMENTATION_PLAN.md; then
    echo "STATUS: done" >> IMPLEMENTATION_PLAN.md
    exit 0
fi
exec escalate raise --blocked-file --run shop-loop --decision-file notes/decisions.md \\
    --summary "Add persistence to the cart service." \\
    --context "PROMPT.md says 'store carts' and names no database." \\
    --attempted "Read PROMPT.md, AGENTS.md and the last three commits" \\
    --evidence artifact:PROMPT.md --question "Which database stores carts?" \\
    --choice "sqlite=one file, no server" --choice "postgres=needs DATABASE_URL"
"""


def shell_without_service(tmp_path: Path, server: Server) -> dict[str, str]:
    """A run's shell: escalate on PATH, its own config folder, no ESCALATE_* but the design."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESCALATE_")}
    env["PATH"] = f"{Path(ESCALATE).parent}:{env.get('PATH', '')}"
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    env["ESCALATE_DESIGN"] = server.env["ESCALATE_DESIGN"]  # what a packet's tiers come from
    return env


def loopkit_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "shop"
    (repo / "notes").mkdir(parents=True)
    (repo / "PROMPT.md").write_text("# Prompt\n\nStore carts.\n", encoding="utf-8")
    (repo / "IMPLEMENTATION_PLAN.md").write_text(
        "# Plan\n\n## Tasks\n\n- [ ] cart storage\n\nSTATUS: in progress\n", encoding="utf-8"
    )
    for name, text in (("run.sh", RUN_SH), ("agent.sh", AGENT)):
        (repo / name).write_text(text, encoding="utf-8")
        (repo / name).chmod(0o755)
    return repo


def loop(repo: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "run.sh"], cwd=repo, env=env, capture_output=True, text=True, timeout=90
    )


def test_a_loopkit_loop_escalates_from_its_repo_and_reads_the_decision_in_its_plan(
    live_patient: Server, tmp_path: Path
) -> None:
    # Given a service, and a user who ran `escalate login` once from their home folder
    patient = live_patient
    env = shell_without_service(tmp_path, patient)
    logged = subprocess.run(
        [ESCALATE, "login", "--url", patient.url, "--home", str(patient.home), "--role", "agent"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert logged.returncode == 0, logged.stderr
    saved = tmp_path / "config" / "escalate" / "credentials.json"
    assert saved.stat().st_mode & 0o777 == 0o600
    agent_token = json.loads((patient.home / "tokens.json").read_text())["agent"]
    assert json.loads(saved.read_text()) == {"url": patient.url, "token": agent_token}

    # When the loop runs in the repo and the agent meets a question
    repo = loopkit_repo(tmp_path)
    first = loop(repo, env)
    # Then the case is filed from there (no NOT FILED, no stray state folder, no new tokens)
    assert first.returncode == 2, first.stdout + first.stderr
    blocked = (repo / "BLOCKED.md").read_text()
    assert "NOT FILED" not in blocked
    assert not (repo / ".escalate").exists() and not (tmp_path / ".escalate").exists()
    found = re.search(r"^- Escalation: ([0-9a-f]+) ", blocked, flags=re.M)
    assert found, blocked
    escalation_id = found.group(1)

    # When the operator decides
    client = patient.client()
    wait_for(client, escalation_id, "awaiting", "followed_up")
    assert client.reply(escalation_id, option="sqlite", sender="ana")["outcome"] == "decided"
    wait_until(lambda: not (repo / "BLOCKED.md").exists(), timeout=30, every=0.1, what="unblock")

    # Then the plan the agent reads has the decision under its own heading, before the unblock
    plan = (repo / "IMPLEMENTATION_PLAN.md").read_text()
    assert plan.startswith("# Plan\n\n## Tasks\n\n- [ ] cart storage\n\nSTATUS: in progress\n")
    section = plan.split("\n## Decisions\n\n", 1)[1]
    assert section.splitlines()[:3] == [
        f"### Case {escalation_id}",
        "- Question: Which database stores carts?",
        section.splitlines()[2],
    ]
    assert section.splitlines()[2].startswith("- Decision: sqlite (decided), ")
    assert not re.search(r"^STATUS: done$", plan, flags=re.M)  # never ends the loop itself
    # And the file named by --decision-file has the same entry
    notes = (repo / "notes" / "decisions.md").read_text()
    assert notes.startswith("## Decisions\n\n") and f"### Case {escalation_id}" in notes

    # And the next run of the loop reads it and finishes
    second = loop(repo, env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert second.stdout.strip().endswith("done")


def test_from_a_folder_with_no_service_and_no_login_nothing_is_made_up(
    live_patient: Server, tmp_path: Path
) -> None:
    # Given a run's shell with neither ESCALATE_URL/ESCALATE_TOKEN nor a saved login
    patient = live_patient
    env = shell_without_service(tmp_path, patient)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # When it raises
    raised = subprocess.run(
        [ESCALATE, "raise", "--run", "r", "--summary", "s", "--context", "c", "--attempted",
         "a", "--evidence", "log:x", "--question", "Go?"],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    # Then it says how to find the service, and creates no state folder or tokens
    assert raised.returncode == 1
    assert "set ESCALATE_URL and ESCALATE_TOKEN, or run `escalate login" in raised.stderr
    assert list(elsewhere.iterdir()) == []
    # And ESCALATE_URL + ESCALATE_TOKEN alone are enough from there
    token = json.loads((patient.home / "tokens.json").read_text())["agent"]
    with_env = {**env, "ESCALATE_URL": patient.url, "ESCALATE_TOKEN": token}
    again = subprocess.run(
        [ESCALATE, "raise", "--run", "r", "--summary", "s", "--context", "c", "--attempted",
         "a", "--evidence", "log:x", "--question", "Go?"],
        cwd=elsewhere, env=with_env, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert list(elsewhere.iterdir()) == []
    # And login refuses a token the service does not know, saving nothing
    refused = subprocess.run(
        [ESCALATE, "login", "--url", patient.url, "--token", "not-a-token"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert refused.returncode == 1 and "did not accept the token: HTTP 401" in refused.stderr
    assert not (tmp_path / "config" / "escalate" / "credentials.json").exists()
