"""A run may wait from any process (#9): a wait that dies is taken up by a new one, by id,
and an answer given from another process resumes it. `escalate wait` is what the run runs."""

from __future__ import annotations

import json
import signal
import subprocess

from tests.api.test_serve import ESCALATE, Server, wait_for
from tests.api.test_shell_loop import agent_env
from workflows.examples import valid_packet


def escalate(server: Server, *args: str) -> subprocess.Popen[str]:
    """The CLI as a run's shell runs it: the service URL and an agent token, nothing else."""
    return subprocess.Popen(
        [ESCALATE, *args],
        env=agent_env(server),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_wait_killed_while_parked_is_resumed_by_a_new_process(
    live_patient: Server, run_id: str
) -> None:
    server = live_patient
    client = server.client()
    created = client.raise_({**valid_packet(), "run_id": run_id, "packet_id": "esc-anywhere-1"})
    wait_for(client, created["id"], "awaiting")
    # Given a run's wait that is killed while the case is still open
    first = escalate(server, "wait", created["id"])
    try:
        first.wait(timeout=1.5)
    except subprocess.TimeoutExpired:
        first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    # And a wait with a short timeout, which says it is still pending
    short = escalate(server, "wait", created["id"], "--timeout", "0.5")
    out, err = short.communicate(timeout=30)
    assert short.returncode == 7 and json.loads(out)["outcome"] == "pending", (out, err)
    # When the run restarts and waits again by id, and a person answers from elsewhere
    again = escalate(server, "wait", created["id"], "--timeout", "60")
    assert client.reply(created["id"], option="approve", sender="ana")["outcome"] == "decided"
    out, err = again.communicate(timeout=60)
    # Then the new process gets the decision, exits 0, and acknowledged the wake
    assert again.returncode == 0, err
    seen = json.loads(out)
    assert seen["outcome"] == "decided" and seen["resumes"] is True
    assert seen["decision"]["option"] == "approve"
    assert client.get(created["id"])["resumed"]["via"] == "ack"
