"""The state folder is private (issue #14, item 10): the SQLite file, the keys, the tokens and
the local inbox are created 0600 in a 0700 folder, whatever the umask lets others read."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from models import state_files
from models.settings import Settings
from workers.app import make_celery
from workers.runtime import runtime_for
from workflows.examples import valid_packet

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def open_umask() -> Iterator[None]:
    """A umask that would make everything world-readable, as many servers have."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_fresh_home_is_0700_and_its_secrets_0600(tmp_path: Path) -> None:
    # Given the embedded defaults: no tokens configured, no channels, SQLite in `home`
    home = tmp_path / "nested" / "home"
    settings = Settings(home=home, design=REPO / "examples" / "design-fast.yaml")
    # When the service starts, takes a case, and the local inbox receives a notification
    with TestClient(create_app(settings)) as client:
        tokens = state_files.api_tokens(home)
        agent = {"Authorization": f"Bearer {tokens['agent']}"}
        raised = client.post("/v1/escalations", headers=agent, json={"packet": valid_packet()})
        assert raised.status_code == 201, raised.text
        inbox = client.post(
            "/v1/dev/inbox",
            json={"title": "t", "message": "m"},
            auth=("inbox", state_files.inbox_token(home)),
        )
        assert inbox.status_code == 200, inbox.text
        runtime = runtime_for(make_celery(settings))
        assert runtime.webhook_secret and runtime.channels  # the key and apprise-dev.yaml
    # Then the folder is the owner's alone, and so is every secret in it
    assert mode(home) == 0o700
    for name in (
        "escalate.sqlite",
        "escalate.sqlite-wal",
        "escalate.sqlite-shm",
        "answer-key",
        "webhook-secret",
        "tokens.json",
        "inbox-token",
        "inbox.jsonl",
        "apprise-dev.yaml",
    ):
        path = home / name
        if name.endswith(("-wal", "-shm")) and not path.exists():
            continue  # SQLite may have checkpointed and removed them
        assert path.exists(), name
        assert mode(path) == 0o600, f"{name} is {oct(mode(path))}"


def test_the_apprise_dev_config_keeps_its_0600_when_rewritten(tmp_path: Path) -> None:
    # Given a config written by an older version, readable by everybody
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "apprise-dev.yaml").write_text("urls: []\n")
    os.chmod(home / "apprise-dev.yaml", 0o644)
    # When the runtime writes it again / Then it is the owner's alone
    settings = Settings(home=home, design=REPO / "examples" / "design-fast.yaml")
    assert runtime_for(make_celery(settings)).channels
    assert mode(home / "apprise-dev.yaml") == 0o600
