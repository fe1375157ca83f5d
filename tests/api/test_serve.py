"""`escalate serve` on the embedded defaults: kill -9 and a restart lose nothing (SPEC §9)."""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.client import Escalations
from api.serve import answers
from tests.support.sink import HttpSink
from tests.support.waiting import wait_until
from tests.workers.conftest import DESIGN, windows_text, write_apprise_config
from workflows.examples import valid_packet

ESCALATE = str(Path(sys.executable).parent / "escalate")


_HANDED_OUT = itertools.count()
_BLOCK = 500  # ports per pytest process, below the kernel's ephemeral range (32768-60999)


def free_port() -> int:
    """A port free now that no other pytest process hands out. bind(0) can give two
    processes the same port between one's pick and its server's bind, seconds later: a test
    then talks to another test's server, which its own test kills."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    base = 20000 + int(worker or 0) * _BLOCK
    for _ in range(_BLOCK):
        port = base + next(_HANDED_OUT) % _BLOCK
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue  # taken: by a server this process started earlier, or by another program
            return port
    raise RuntimeError(f"no free port in {base}-{base + _BLOCK - 1}")


class Server:
    """One `escalate serve` process tree, started and killed as a user would."""

    def __init__(self, home: Path, env: dict[str, str]) -> None:
        self.home, self.env = home, env
        self.url = f"http://127.0.0.1:{env['ESCALATE_PORT']}"
        self.process: subprocess.Popen[bytes] | None = None
        self._client: Escalations | None = None

    def start(self, command: list[str] | None = None) -> None:
        """`escalate serve`, or `command` that runs it, until it answers /healthz."""
        # Kept beside its home (pytest keeps the last runs' tmp folders): what a failure shows.
        with (self.home.parent / "serve.log").open("ab") as log:
            self.process = subprocess.Popen(
                command or [ESCALATE, "serve"], env=self.env, stdout=log, stderr=subprocess.STDOUT
            )
        process = self.process

        def healthy() -> bool:
            assert process.poll() is None, "serve exited during start"
            # ours answered, not a stranger
            return answers(self.url) and process.poll() is None

        # Generous: three Python processes start here, and a loaded 2-core machine is slow at it.
        wait_until(healthy, timeout=90, every=0.1, what="serve to answer /healthz")

    def processes(self) -> list[int]:
        """Every live process working on this server's state folder (serve's children)."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                environ = (entry / "environ").read_bytes()
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if stat.split(") ", 1)[-1].startswith("Z"):
                continue  # a zombie is already dead
            if f"ESCALATE_HOME={self.home}".encode() in environ.split(b"\0"):
                found.append(int(entry.name))
        return found

    def kill9(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        # Every child dies with it: no orphan worker or beat beside the restart
        wait_until(
            self.processes, lambda alive: not alive, timeout=15, every=0.1, what="orphans to die"
        )

    def stop(self) -> None:
        """Teardown kills outright: a graceful stop (2 s or more) is its own test below, not
        a cost every test pays. Nothing is left running after the test."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for pid in self.processes():
            os.kill(pid, signal.SIGKILL)

    def notified(self, text: str) -> None:
        """Wait until a notification naming `text` reaches the serve's local inbox."""
        inbox = self.home / "inbox.jsonl"
        wait_until(
            lambda: inbox.exists() and text in inbox.read_text(encoding="utf-8"),
            timeout=60,
            every=0.1,
            what=f"a notification naming {text}",
        )

    def client(self) -> Escalations:
        """An admin client, made once: a new one loads the certificates again (~20 ms)."""
        if self._client is None:
            tokens = json.loads((self.home / "tokens.json").read_text())
            self._client = Escalations(self.url, tokens["admin"])
        return self._client


def make_server(folder: Path, sink: HttpSink | None, design: Path = DESIGN) -> Server:
    """A serve (not started) on the embedded defaults under `folder`, paging `sink` (with
    none, every tag pages the serve's local inbox)."""
    home = folder / "home"
    env = {
        **os.environ,
        "ESCALATE_HOME": str(home),
        "ESCALATE_PORT": str(free_port()),
        "ESCALATE_DESIGN": str(design),
        "ESCALATE_SWEEP_INTERVAL": "0.5",  # windows of seconds: defaults land near due
        "ESCALATE_STALL_AFTER": "1",
    }
    for name in (
        "ESCALATE_DATABASE_URL",
        "ESCALATE_BROKER_URL",
        "ESCALATE_API_TOKENS",
        "ESCALATE_APPRISE_CONFIG",
    ):
        env.pop(name, None)  # the embedded defaults, whatever the caller's shell says
    if sink is not None:
        apprise = write_apprise_config(folder / "apprise.yaml", sink)
        env["ESCALATE_APPRISE_CONFIG"] = str(apprise)
    return Server(home, env)


@pytest.fixture
def server(tmp_path: Path, sink: HttpSink) -> Iterator[Server]:
    running = make_server(tmp_path, sink)
    yield running
    running.stop()


def wait_for(client: Escalations, escalation_id: str, *states: str) -> dict[str, Any]:
    return wait_until(
        lambda: client.get(escalation_id),
        lambda case: case["state"] in states,
        timeout=60,
        every=0.1,
        what=f"{escalation_id} in {states}",
    )


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_or_ctrl_c_stops_serve_and_every_child_cleanly(
    server: Server, stop_signal: signal.Signals
) -> None:
    server.start()
    assert server.process is not None
    server.process.send_signal(stop_signal)
    assert server.process.wait(timeout=30) == 0
    wait_until(
        server.processes, lambda alive: not alive, timeout=15, every=0.1, what="children to stop"
    )


def test_kill_9_right_after_intake_loses_nothing(patient: Server, sink: HttpSink) -> None:
    server = patient  # windows of minutes: the answer after the restart never races the default
    # Given a case accepted by the API
    server.start()
    created = server.client().raise_(
        {**valid_packet(), "packet_id": "esc-serve-1"}, options=["approve", "deny"]
    )
    assert created["created"]
    # When serve is killed outright before the workflow could finish, then restarted
    server.kill9()
    server.start()
    client = server.client()
    # Then the case still walks to a notification, takes an answer and closes
    wait_for(client, created["id"], "awaiting", "followed_up")
    sink.wait_for(lambda got: any(r.path == "/ops" for r in got))
    answer = client.reply(created["id"], option="approve", sender="ana")
    assert answer["outcome"] == "decided"
    closed = wait_for(client, created["id"], "closed")
    assert closed["outcome"] == "decided" and closed["decision"]["decided_by"] == "api:admin"


def test_kill_9_while_waiting_keeps_the_case_and_its_deadline(
    server: Server, sink: HttpSink, tmp_path: Path
) -> None:
    # Windows of seconds, long enough that the kill lands while the case waits
    design = tmp_path / "design-seconds.yaml"
    design.write_text(windows_text("4s", "8s"), encoding="utf-8")
    server.env["ESCALATE_DESIGN"] = str(design)
    server.start()
    created = server.client().raise_({**valid_packet(), "packet_id": "esc-serve-2"})
    wait_for(server.client(), created["id"], "awaiting")
    server.kill9()
    server.start()
    # The window and timeout kept running in SQL: follow-up, then the default, then close
    closed = wait_for(server.client(), created["id"], "closed")
    assert closed["decision"]["is_default"] is True
    kinds = [e["kind"] for e in server.client().events(created["id"])["events"]]
    assert kinds.count("followed_up") == 1 and kinds.count("timeout_default") == 1

    # The follow-up page went out once, unless the default decided before it was sent
    # (a page asking to decide a decided case is cancelled, never sent late).
    def follow_up() -> tuple[int, str]:
        posted = [r for r in sink.posts("/ops") if "follow-up" in r.body["title"]]
        case = server.client().get(created["id"])
        [page] = [d for d in case["deliveries"] if d["purpose"] == "follow_up"]
        return len(posted), page["state"]

    # A page the sink got is recorded once its send commits: on a loaded machine that can
    # come after the default closed the case.
    seen = wait_until(follow_up, lambda got: got != (1, "sending"), timeout=30, what="the record")
    # Or the killed serve had claimed it: its send lease (minutes) must run out before the
    # page is taken again, and then it is cancelled, never sent to a decided case.
    held = (0, "sending")
    assert seen in ((1, "sent"), (0, "cancelled"), held)


def test_an_answer_link_over_real_http_asks_on_get_and_decides_once_on_post(
    patient: Server, sink: HttpSink
) -> None:
    server = patient  # windows of minutes: the link is used before any default
    import re

    server.start()
    created = server.client().raise_({**valid_packet(), "packet_id": "esc-serve-link"})
    sink.wait_for(lambda got: any(r.path == "/ops" for r in got))
    message = sink.posts("/ops")[0].body["message"]
    [link] = re.findall(r"^- approve(?: — .*)?\n  (http\S+)$", message, flags=re.M)
    # A link previewer's GET decides nothing
    assert httpx.get(link).status_code == 200
    assert server.client().get(created["id"])["decision"] is None
    # The operator's POST decides, once
    assert httpx.post(link).status_code == 200
    closed = wait_for(server.client(), created["id"], "closed")
    assert closed["decision"]["channel"] == "link"
    assert httpx.post(link).status_code == 409


def test_serve_refuses_to_start_when_a_design_tag_has_no_usable_channel(
    server: Server, tmp_path: Path, sink: HttpSink
) -> None:
    # Given a config whose only `pager` URL needs a package this machine lacks (slixmpp),
    # and a tag the design names that no URL carries at all (ops-low)
    host = sink.url.removeprefix("http://")
    lines = ["urls:", "  - xmpp://bot:secret@127.0.0.1/ops@example.com:", "      tag: pager"]
    for tag in ("ops", "ops-log", "oncall"):
        lines += [f"  - json://{host}/{tag}:", f"      tag: {tag}"]
    config = tmp_path / "partial.yaml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    # When serve starts
    done = subprocess.run(
        [ESCALATE, "serve"],
        env={**server.env, "ESCALATE_APPRISE_CONFIG": str(config)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    # Then it refuses, naming each tag and what is missing; nothing was started
    assert done.returncode == 1, done.stdout
    assert "tag 'pager' has no usable channel: xmpp:// needs the Python package slixmpp" in (
        done.stderr
    )
    assert f"tag 'ops-low' has no usable channel: no URL in {config} has this tag" in done.stderr
    assert "secret" not in done.stderr
    assert server.processes() == []
