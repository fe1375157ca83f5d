"""Fixtures for the HTTP API tests: embedded settings under tmp_path and a started app."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from models.settings import Settings

REPO = Path(__file__).resolve().parents[2]
API_TOKENS = "agent:agent-t,operator:op-t,admin:admin-t"


@pytest.fixture
def api_settings(tmp_path: Path) -> Settings:
    """SQLite database and folder broker under tmp_path: no server, no worker."""
    return Settings(
        home=tmp_path / "home",
        design=REPO / "examples" / "design-fast.yaml",
        api_tokens=API_TOKENS,
        outbound_allow="127.0.0.1/32",  # the tests' local sinks; the service's own port stays out
    )


@pytest.fixture
def api_client(api_settings: Settings) -> Iterator[TestClient]:
    """The app with its lifespan run, so the database is migrated before the first request."""
    with TestClient(create_app(api_settings)) as client:
        yield client


# The live `escalate serve` fixture, shared by every test in tests/api.
from tests.api.test_serve import Server, server  # noqa: E402, F401
from tests.support.shared_serve import run_folder, shared_server  # noqa: E402
from tests.workers.conftest import patient_design  # noqa: E402


@pytest.fixture
def patient(server: Server, tmp_path: Path) -> Server:  # noqa: F811
    """The test design with windows of minutes, so no timeout default races the answer."""
    server.env["ESCALATE_DESIGN"] = str(patient_design(tmp_path))
    return server


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_folder(tmp_path_factory.getbasetemp())


# Two shared serves, each idling through the whole run once started (about 12 s of CPU in
# a run): their designs carry the Claude hook's tools rules too, which gate only the hook.
@pytest.fixture
def live(run_dir: Path) -> Server:
    """The run's shared serve on the test design (windows of seconds): see shared_serve."""
    from tests.api.test_claude_hook import gated_text

    return shared_server(run_dir, "seconds", gated_text(patient=False))


@pytest.fixture
def live_patient(run_dir: Path) -> Server:
    """The run's shared serve with windows of minutes: no timeout default races an answer."""
    from tests.api.test_claude_hook import gated_text

    return shared_server(run_dir, "minutes", gated_text(patient=True), sweep=1.0)


@pytest.fixture
def run_id() -> str:
    """A run of the test's own on a shared serve, so no other test's open case is joined."""
    return f"run-{secrets.token_hex(4)}"
