"""A database outage answers 503, never 500 (issue #14, item 11).

The test runs its own PostgreSQL (initdb + pg_ctl on a spare port, as the `postgres` user
when we are root, since initdb refuses root) and stops it under a running app: the shared
server on 5432 is never touched. The broker's outage is a port nothing listens on.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from models.settings import Settings
from tests.api.test_serve import free_port
from tests.support.rows import mark_awaiting
from tests.support.services import missing
from workflows.examples import valid_packet

REPO = Path(__file__).resolve().parents[2]
AGENT = {"Authorization": "Bearer agent-t"}
OPERATOR = {"Authorization": "Bearer op-t"}
BINARIES = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))


@dataclass
class PrivatePostgres:
    """One PostgreSQL cluster in a temporary folder, started and stopped by the test."""

    folder: Path
    port: int
    bin: Path
    user: str | None  # run as this user (we are root), or as ourselves

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def run(self, *argv: str) -> None:
        command = [str(self.bin / argv[0]), *argv[1:]]
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=60)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = str(self.folder / "server.log")
        self.run("pg_ctl", "-D", str(self.folder / "data"), "-o", options, "-l", log, "-w", "start")

    def stop(self) -> None:
        self.run("pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "-w", "stop")


@pytest.fixture
def postgres() -> Iterator[PrivatePostgres]:
    if not BINARIES:
        missing("no PostgreSQL server binaries in /usr/lib/postgresql/*/bin")
    user = "postgres" if os.geteuid() == 0 else None
    folder = Path(tempfile.mkdtemp(prefix="escalate-pg-"))
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(folder, entry.pw_uid, entry.pw_gid)
    server = PrivatePostgres(folder, free_port(), Path(BINARIES[-1]).parent, user)
    server.run("initdb", "-D", str(folder / "data"), "-U", "postgres", "-A", "trust", "--no-sync")
    server.start()
    try:
        yield server
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):  # stopped by the test
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)


def settings_for(tmp_path: Path, **changes: object) -> Settings:
    return Settings(
        home=tmp_path / "home",
        design=REPO / "examples" / "design-fast.yaml",
        api_tokens="agent:agent-t,operator:op-t",
        **changes,  # type: ignore[arg-type]
    )


def assert_unavailable(response: httpx.Response, dependency: str) -> None:
    where = f"{response.request.method} {response.request.url.path}"
    assert response.status_code == 503, f"{where}: {response.status_code} {response.text}"
    assert int(response.headers["retry-after"]) > 0, where
    assert dependency in response.text, where


def test_with_postgresql_stopped_every_request_answers_503_and_recovers(
    postgres: PrivatePostgres, tmp_path: Path
) -> None:
    # Given the API on PostgreSQL with one case awaiting an answer, and a signed-in operator
    settings = settings_for(tmp_path, database_url=postgres.url)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        raised = client.post("/v1/escalations", headers=AGENT, json={"packet": valid_packet()})
        assert raised.status_code == 201, raised.text
        case_id = raised.json()["id"]
        mark_awaiting(settings, case_id)
        client.post("/dashboard/login", data={"token": "op-t"})
        assert client.get("/dashboard").status_code == 200

        # When PostgreSQL goes down
        postgres.stop()

        # Then health says the database is down, and every request answers 503 + Retry-After
        health = client.get("/healthz")
        assert_unavailable(health, "database")
        assert health.json()["down"].keys() == {"database"}
        second = {**valid_packet(), "packet_id": "esc-outage-2"}
        for response in (
            client.get("/v1/escalations", headers=OPERATOR),
            client.get(f"/v1/escalations/{case_id}", headers=OPERATOR),
            client.get(f"/v1/escalations/{case_id}/events", headers=OPERATOR),
            client.get(f"/v1/escalations/{case_id}/wait", params={"hold": 0}, headers=AGENT),
            client.get("/v1/stats", headers=OPERATOR),
            client.post("/v1/escalations", headers=AGENT, json={"packet": second}),
            client.post(
                f"/v1/escalations/{case_id}/replies", headers=OPERATOR, json={"option": "approve"}
            ),
            client.post(
                "/v1/inbound/text",
                headers=OPERATOR,
                json={"text": "K7Q2MX9D4P approve", "channel": "c", "sender": "s"},
            ),
            client.get("/dashboard", follow_redirects=False),
            client.post("/dashboard/login", data={"token": "op-t"}, follow_redirects=False),
        ):
            assert_unavailable(response, "database")

        # When it is back / Then the same app answers again, and the case can be decided
        postgres.start()
        assert client.get("/healthz").status_code == 200
        decided = client.post(
            f"/v1/escalations/{case_id}/replies", headers=OPERATOR, json={"option": "approve"}
        )
        assert decided.status_code == 200, decided.text
        assert decided.json()["outcome"] == "decided"


def test_with_the_broker_down_health_names_it_and_a_raise_is_still_kept(tmp_path: Path) -> None:
    # Given the API on SQLite with a Redis broker nobody listens for
    settings = settings_for(tmp_path, broker_url=f"redis://127.0.0.1:{free_port()}/0")
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        # When health is asked / Then 503 names the broker, and the database is fine
        health = client.get("/healthz")
        assert_unavailable(health, "broker")
        assert health.json()["down"].keys() == {"broker"}
        # And a raise is stored (SQL is the truth; the sweeper sends it on once the broker
        # is back): the agent is not told to retry what is already kept
        raised = client.post("/v1/escalations", headers=AGENT, json={"packet": valid_packet()})
        assert raised.status_code == 201, raised.text
