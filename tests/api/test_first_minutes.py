"""The first five minutes, tried as a new user would: serve, open it, start it twice, wait
through a restart, write a packet to start from."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import httpx

from api.check_cli import EXIT_PASS
from tests.api.test_serve import ESCALATE, Server, free_port, wait_for
from tests.api.test_shell_loop import agent_env
from workflows.examples import valid_packet

REPO = Path(__file__).resolve().parents[2]


def test_serve_shows_its_url_once_it_answers_and_only_its_own_lines(
    server: Server, tmp_path: Path
) -> None:
    # When a new user starts serve and reads its output
    process = subprocess.Popen(
        [ESCALATE, "serve"], env=server.env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    server.process = process  # stopped by the fixture
    assert process.stdout is not None
    seen = []
    for line in process.stdout:
        seen.append(line)
        if line.startswith("agent-escalation on http://"):
            # Then the URL it shows answers at once, and so does a raise
            assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200
            created = server.client().raise_(valid_packet(), options=["approve", "deny"])
            assert created["created"]
            break
    else:
        raise AssertionError("serve printed no URL: " + "".join(seen))
    # And it is not buried under the workers' banners or broker warnings
    text = "".join(seen)
    assert "-------------- celery@" not in text and "No hostname was supplied" not in text
    # And `/` leads to the dashboard
    root = httpx.get(f"{server.url}/", timeout=5)
    assert root.status_code == 307 and root.headers["location"] == "/dashboard"


def test_a_second_serve_refuses_at_once_naming_the_one_running(
    server: Server, tmp_path: Path
) -> None:
    server.start()
    # On the same home (another port): refused before any banner or token
    same_home = {**server.env, "ESCALATE_PORT": str(free_port())}
    started = time.monotonic()
    second = subprocess.run(
        [ESCALATE, "serve"], env=same_home, capture_output=True, text=True, timeout=30
    )
    # "At once": long before a start's own 90 s limit, though a loaded machine takes seconds
    assert second.returncode == 1 and time.monotonic() - started < 30
    assert f"{server.home.resolve()} is already served: pid " in second.stderr
    assert server.url in second.stderr and "tokens" not in second.stdout
    # On the same port (another home): refused, naming what answers there; nothing created
    other = tmp_path / "other-home"
    same_port = {**server.env, "ESCALATE_HOME": str(other)}
    third = subprocess.run(
        [ESCALATE, "serve"], env=same_port, capture_output=True, text=True, timeout=30
    )
    assert third.returncode == 1
    assert f"{server.url} is taken: an escalate serve answers there" in third.stderr
    assert not other.exists()
    # And the first one still serves, alone
    assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200


def test_escalate_wait_rides_out_a_server_restart(patient: Server, tmp_path: Path) -> None:
    # Given a run waiting on its case
    patient.start()
    created = patient.client().raise_(valid_packet(), options=["approve", "deny"])
    # (not under the server's ESCALATE_HOME: kill9 counts what runs there as the server's)
    env = {k: v for k, v in agent_env(patient).items() if k != "ESCALATE_HOME"}
    waiting = subprocess.Popen(
        [ESCALATE, "wait", created["id"], "--timeout", "90"], env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(1)  # the wait is holding its long-poll
    # When the server is killed and started again
    patient.kill9()
    time.sleep(1.5)  # the wait meets a refused connection meanwhile
    assert waiting.poll() is None
    patient.start()
    client = patient.client()
    wait_for(client, created["id"], "awaiting", "followed_up")
    client.reply(created["id"], option="approve", sender="ana")
    # Then the same wait returns the decision: exit 0
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, err
    assert json.loads(out)["state"] == "closed"


def test_the_example_packets_can_be_written_to_start_from(tmp_path: Path) -> None:
    written = tmp_path / "packet.json"
    made = subprocess.run(
        [ESCALATE, "check", "--make-valid", "--write", str(written)],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert made.returncode == EXIT_PASS and json.loads(written.read_text()) == valid_packet()
    fixture = tmp_path / "fixture.json"
    failing = subprocess.run(
        [ESCALATE, "check", "--make-fixture", "--write", str(fixture)],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert failing.returncode == 1 and fixture.exists()
    # And examples/ holds one to start from, which passes
    shipped = subprocess.run(
        [ESCALATE, "check", str(REPO / "examples" / "packet.json")],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert shipped.returncode == EXIT_PASS, shipped.stdout
