"""`escalate raise` from a shell: the service's design fills the rest, the wake names a queue."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.api.test_serve import ESCALATE, Server
from tests.api.test_shell_loop import agent_env

FLAGS = [
    *("raise", "--run", "run-cli-wake", "--severity", "medium", "--trigger", "uncertain"),
    *("--summary", "Migrate 120 records and verify totals match source."),
    *("--detail", "Source has 120 records, target 117."),
    *("--attempted", "Re-ran the migration", "--evidence", "log:logs/migrate.log"),
    *("--question", "Skip the 3 orphan records?"),
]


def escalate(server: Server, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ESCALATE, *args],
        cwd=cwd,
        env=agent_env(server),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_raise_names_its_workers_queue_and_leaves_recipient_to_the_design(
    live: Server, tmp_path: Path
) -> None:
    server = live
    # Given a run that names its wake task and the queue its own worker consumes
    raised = escalate(
        server, tmp_path, *FLAGS, "--wake-task", "my.wake", "--wake-queue", "my-agent"
    )
    # Then the case is filed with that wake, and the service's design filled the packet
    assert raised.returncode == 0, raised.stderr
    case = server.client().get(raised.stdout.split()[0])
    assert case["wake"] == {"task": "my.wake", "queue": "my-agent"}
    assert (case["packet"]["recipient"], case["packet"]["waiting_behavior"]) == ("ops", "read_only")
    # And a queue that is not one, or the service's own, is refused naming the field
    for queue in ("my agent", "escalation"):
        refused = escalate(server, tmp_path, *FLAGS, "--wake-task", "w", "--wake-queue", queue)
        assert refused.returncode == 1 and "wake.queue: " in refused.stderr, refused.stderr
