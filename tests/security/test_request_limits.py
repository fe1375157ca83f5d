"""Size limits (issue #14, item 6): a request body is capped (413), and so is each field (422,
naming the field without echoing its value); the embedded inbox takes a token and the same caps.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apprise
import httpx
import pytest
import uvicorn
from fastapi.testclient import TestClient

from api.app import create_app
from models import state_files
from models.settings import Settings
from tests.api.test_serve import free_port
from tests.security import embedded
from tests.security.embedded import AGENT, OPERATOR, REPO
from workers.channels import dev_apprise_config, dev_inbox_path
from workflows.examples import valid_packet
from workflows.vocabulary import REQUIRED_STRINGS

settings = embedded.settings  # the fixtures, under the names the tests use
client = embedded.client

PACKET_TEXT = REQUIRED_STRINGS  # the packet's text fields (SPEC §1)
LONG = "x" * 20_000  # over every field's cap, well under the body's


def stored_cases(settings: Settings) -> int:
    database = settings.resolved_database_url.removeprefix("sqlite:///")
    with sqlite3.connect(database) as db:
        count: int = db.execute("SELECT count(*) FROM escalations").fetchone()[0]
        return count


def raise_(client: TestClient, request: dict[str, Any]) -> httpx.Response:
    return client.post("/v1/escalations", headers=AGENT, json=request)


def test_a_ten_megabyte_packet_is_refused_413_and_nothing_is_stored(
    client: TestClient, settings: Settings
) -> None:
    # Given a packet whose trigger_detail holds 10 MB / When it is raised
    response = raise_(client, {"packet": {**valid_packet(), "trigger_detail": "x" * 10_000_000}})
    # Then it is refused before it is read in full, and nothing was stored or sent
    assert response.status_code == 413
    assert stored_cases(settings) == 0


def test_a_body_without_a_length_is_cut_off_at_the_cap(client: TestClient) -> None:
    # Given a chunked body (no Content-Length) that keeps coming
    def chunks() -> Iterator[bytes]:
        yield b'{"packet": {"trigger_detail": "'
        for _ in range(64):
            yield b"x" * 16_384
        yield b'"}}'

    # When it is raised / Then the cap still holds
    response = client.post(
        "/v1/escalations",
        content=chunks(),
        headers={**AGENT, "Content-Type": "application/json"},
    )
    assert response.status_code == 413


def test_the_body_cap_is_a_setting(settings: Settings) -> None:
    # Given a service capped at 4 KiB
    small = settings.model_copy(update={"max_body_size": 4096})
    with TestClient(create_app(small)) as client:
        # When a 5 KB request arrives / Then 413; the valid example still fits
        padded = {"packet": {**valid_packet(), "task_summary": "y" * 5000}}
        assert raise_(client, padded).status_code == 413
        assert raise_(client, {"packet": valid_packet()}).status_code == 201


@pytest.mark.parametrize("field", PACKET_TEXT)
def test_an_over_long_packet_field_is_refused_422_by_name(
    client: TestClient, settings: Settings, field: str
) -> None:
    # Given a packet with 20,000 characters in one field / When it is raised
    response = raise_(client, {"packet": {**valid_packet(), field: LONG}})
    # Then 422 names the field and its cap, and neither stores nor echoes the value
    assert response.status_code == 422, response.text
    [line] = response.json()["errors"]
    assert line.startswith(f"packet.{field}: at most ") and line.endswith(", not 20000")
    assert LONG not in response.text
    assert stored_cases(settings) == 0


@pytest.mark.parametrize(
    ("request_", "named"),
    [
        ({"packet": {**valid_packet(), "attempted": ["a", LONG]}}, "packet.attempted[1]: at most"),
        ({"packet": {**valid_packet(), "attempted": ["a"] * 500}}, "packet.attempted: at most"),
        (
            {"packet": {**valid_packet(), "evidence": [{"kind": "log", "ref": LONG}]}},
            "packet.evidence[0].ref: at most",
        ),
        ({"packet": valid_packet(), "snapshot": {"verified": LONG}}, "snapshot.verified: at most"),
        ({"packet": valid_packet(), "wake": {"webhook": LONG}}, "wake.webhook: at most"),
        ({"packet": valid_packet(), "owner": LONG}, "owner: at most"),
        ({"packet": valid_packet(), "options": [LONG]}, "options[0]: at most"),
        ({"packet": {**valid_packet(), "extra": LONG}}, "packet.extra: at most"),
    ],
    ids=["list-entry", "list-length", "evidence-ref", "snapshot", "wake", "owner", "option", "any"],
)
def test_every_part_of_the_request_has_a_cap(
    client: TestClient, settings: Settings, request_: dict[str, Any], named: str
) -> None:
    response = raise_(client, request_)
    assert response.status_code == 422, response.text
    assert any(line.startswith(named) for line in response.json()["errors"]), response.text
    assert stored_cases(settings) == 0


def test_a_value_nested_without_end_is_a_422_not_a_500(client: TestClient) -> None:
    nested: Any = "x"
    for _ in range(500):
        nested = [nested]
    response = raise_(client, {"packet": valid_packet(), "snapshot": {"proof": nested}})
    assert response.status_code == 422
    assert "nested deeper than" in response.text


@pytest.mark.parametrize(
    ("path", "headers", "body", "field"),
    [
        ("/v1/escalations/0123456789ab/replies", OPERATOR, {"text": LONG}, "text"),
        ("/v1/escalations/0123456789ab/replies", OPERATOR, {"option": LONG}, "option"),
        (
            "/v1/escalations/0123456789ab/replies",
            OPERATOR,
            {"text": "ok", "sender": LONG},
            "sender",
        ),
        ("/v1/inbound/text", OPERATOR, {"text": LONG, "channel": "c", "sender": "s"}, "text"),
        ("/v1/inbound/text", OPERATOR, {"text": "ABC x", "channel": LONG}, "channel"),
        ("/v1/pipelines/escalations", AGENT, {"state_dir": LONG}, "state_dir"),
        (
            "/v1/tasks/T-1/blockers",
            AGENT,
            {"escalations": [LONG], "wake": {"task": "t"}},
            "escalations",
        ),
    ],
    ids=[
        "reply-text",
        "reply-option",
        "reply-sender",
        "inbound",
        "channel",
        "pipeline",
        "blockers",
    ],
)
def test_every_endpoint_caps_its_fields_with_a_422_naming_them(
    client: TestClient, path: str, headers: dict[str, str], body: dict[str, Any], field: str
) -> None:
    response = client.post(path, headers=headers, json=body)
    assert response.status_code == 422, response.text
    assert any(field in error["loc"] for error in response.json()["detail"]), response.text
    assert LONG not in response.text  # named, never echoed


def test_the_dev_inbox_takes_its_token_and_the_same_caps(
    client: TestClient, settings: Settings
) -> None:
    note = {"title": "[escalate] blocked", "message": "hello", "type": "info"}
    token = state_files.inbox_token(settings.home)
    # Given no token, or a wrong one / Then nothing is stored
    assert client.post("/v1/dev/inbox", json=note).status_code == 401
    assert client.post("/v1/dev/inbox", json=note, auth=("inbox", "guess")).status_code == 401
    assert not dev_inbox_path(settings).exists()
    # Given the token but an over-long title, or a body over the cap / Then 422, 413
    over = client.post("/v1/dev/inbox", json={**note, "title": LONG}, auth=("inbox", token))
    assert over.status_code == 422
    huge = client.post("/v1/dev/inbox", json={"message": "m" * 300_000}, auth=("inbox", token))
    assert huge.status_code == 413
    # Given the token and a notification in bounds / Then it is stored
    assert client.post("/v1/dev/inbox", json=note, auth=("inbox", token)).status_code == 200
    assert '"title": "[escalate] blocked"' in dev_inbox_path(settings).read_text()


def test_apprise_delivers_to_the_dev_inbox_with_the_generated_config(tmp_path: Path) -> None:
    # Given the embedded service listening on a real port, with no apprise config of its own
    port = free_port()
    settings = Settings(
        home=tmp_path / "home",
        design=REPO / "examples" / "design-fast.yaml",
        api_tokens="agent:agent-t",
        port=port,
    )
    server = uvicorn.Server(uvicorn.Config(create_app(settings), port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 15
        while not server.started:
            assert time.monotonic() < deadline, "the API did not start"
            time.sleep(0.05)
        # When apprise sends through the config the worker would generate
        sender = apprise.Apprise()
        config = apprise.AppriseConfig()
        config.add(str(dev_apprise_config(settings, {"ops"})))
        sender.add(config)
        assert sender.notify(title="[escalate] hello", body="a case", tag="ops")
        # Then the inbox holds it, and the config never names the token where it is logged
        assert "[escalate] hello" in dev_inbox_path(settings).read_text()
        token = state_files.inbox_token(settings.home)
        assert all(token not in service.url(privacy=True) for service in sender.find(tag="ops"))
    finally:
        server.should_exit = True
        thread.join(timeout=10)
