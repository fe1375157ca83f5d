"""`escalate stats` and `escalate retry` against a real serve, as a monitor and an operator."""

from __future__ import annotations

import json
import subprocess

from tests.api.test_serve import ESCALATE, Server, server
from tests.api.test_shell_loop import agent_env
from workflows.examples import valid_packet

__all__ = ["server"]  # the fixture, imported so pytest finds it here


def test_stats_reports_counts_and_retry_names_what_it_cannot_do(server: Server) -> None:
    server.start()
    client = server.client()
    case = client.raise_({**valid_packet(), "packet_id": "stats-1"})
    env = agent_env(server)
    operator = json.loads((server.home / "tokens.json").read_text())["operator"]

    counted = subprocess.run(
        [ESCALATE, "stats"], env=env, capture_output=True, text=True, timeout=30
    )
    assert counted.returncode == 0, counted.stderr  # nothing parked
    stats = json.loads(counted.stdout)
    assert sum(stats["by_state"].values()) == 1 and stats["dead_letter"] == []
    assert set(stats) == {
        "open",
        "by_state",
        "oldest_open_at",
        "dead_letter",
        "deliveries",
        "decided_not_resumed",
    }

    refused = subprocess.run(
        [ESCALATE, "retry", case["id"]],
        env={**env, "ESCALATE_TOKEN": operator},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert refused.returncode == 1
    assert f"escalation {case['id']} is" in refused.stderr
    assert "only dead_letter is retried" in refused.stderr
