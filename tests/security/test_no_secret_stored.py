"""No secret is stored through any field (issue #14, item 7).

A secret in `owner`, in a reply's `sender` or `message_id`, in a bridge's channel or a
dashboard sign-in name was stored verbatim and, when that sender decided, copied into
decided_by, DECISION.md, decisions.log and the command file. Every one is now refused (or,
for a sign-in name, dropped) before anything is written: the database holds none of them.
"""

from __future__ import annotations

import sqlite3

import pytest
from fastapi.testclient import TestClient

from models.settings import Settings
from tests.security import embedded
from tests.security.cases import open_case
from tests.security.embedded import AGENT, OPERATOR
from workflows.examples import valid_packet

settings = embedded.settings  # the fixtures, under the names the tests use
client = embedded.client

SECRETS = [
    pytest.param("ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", id="github-token"),
    pytest.param("xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", id="slack-token"),
]


def database_holds(settings: Settings, secret: str) -> list[str]:
    """Every table whose rows hold `secret` anywhere."""
    path = settings.resolved_database_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as db:
        tables = [row[0] for row in db.execute("select name from sqlite_master where type='table'")]
        return [
            table
            for table in tables
            if any(secret in repr(row) for row in db.execute(f"select * from {table}"))
        ]


@pytest.mark.parametrize("secret", SECRETS)
def test_a_secret_owner_is_refused_by_name(
    client: TestClient, settings: Settings, secret: str
) -> None:
    response = client.post(
        "/v1/escalations",
        headers=AGENT,
        json={"packet": valid_packet(), "owner": f"slack:{secret}"},
    )
    assert response.status_code == 422, response.text
    assert any(line.startswith("owner: contains a secret") for line in response.json()["errors"])
    assert database_holds(settings, secret) == []


@pytest.mark.parametrize("secret", SECRETS)
def test_a_secret_reply_sender_is_refused_and_never_decides(
    client: TestClient, settings: Settings, secret: str
) -> None:
    escalation_id, _ = open_case(client, settings)
    response = client.post(
        f"/v1/escalations/{escalation_id}/replies",
        headers=OPERATOR,
        json={"option": "approve", "sender": secret},
    )
    assert response.status_code == 422, response.text
    assert database_holds(settings, secret) == []


@pytest.mark.parametrize("secret", SECRETS)
@pytest.mark.parametrize("field", ["sender", "message_id", "channel"])
def test_a_secret_in_a_bridged_reply_is_refused(
    client: TestClient, settings: Settings, secret: str, field: str
) -> None:
    _, code = open_case(client, settings)
    body = {"text": f"{code} approve", "sender": "U1", "channel": "chat", "message_id": "m1"}
    body[field] = secret[:32] if field == "channel" else secret
    response = client.post("/v1/inbound/text", headers=OPERATOR, json=body)
    assert response.status_code == 422, response.text
    assert database_holds(settings, secret[:32] if field == "channel" else secret) == []


@pytest.mark.parametrize("secret", SECRETS)
def test_a_secret_sign_in_name_is_not_kept(
    client: TestClient, settings: Settings, secret: str
) -> None:
    escalation_id, _ = open_case(client, settings)
    signed = client.post(
        "/dashboard/login", data={"token": "op-t", "name": secret}, follow_redirects=False
    )
    assert signed.status_code == 303, signed.text
    decided = client.post(f"/dashboard/cases/{escalation_id}/answer", params={"option": "deny"})
    assert decided.status_code == 200, decided.text
    assert database_holds(settings, secret) == []
