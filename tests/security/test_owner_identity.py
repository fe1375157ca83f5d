"""The owner of a harm_risk case cannot approve it by any path (issue #14, item 4).

A responder is what the server authenticated: a bearer token and the name bound to it, a
dashboard session (its token's name, not the one typed at sign-in), a Slack/Telegram user
the platform signed for. A name the caller types is a note. Links, ntfy buttons and chat
bridges carry a code and a reported name only: on a harm_risk case with an owner they may
stop the run, never approve it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, col, select

from api.app import create_app
from api.statuses import OUTCOME_STATUS
from models.db import make_engine, transaction
from models.settings import Settings
from models.tables import Decision, Escalation, Reply
from workers.answering import reply_token, sign_link, token_hash
from workers.app import make_celery
from workers.inbound import slack
from workers.runtime import runtime_for
from workflows.examples import valid_packet
from workflows.judgement import ReplyOutcome

REPO = Path(__file__).resolve().parents[2]
SLACK_SECRET = "slack-signing-secret-for-tests"
TOKENS = "agent:agent-t,operator:op-plain,operator:op-ana:ana,operator:op-cy:cy"
AGENT = {"Authorization": "Bearer agent-t"}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        home=tmp_path / "home",
        design=REPO / "examples" / "design-fast.yaml",
        api_tokens=TOKENS,
        slack_signing_secret=SLACK_SECRET,
    )


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as started:
        yield started


def harm_case(client: TestClient, settings: Settings, owner: str | None) -> str:
    """A raised harm_risk case with `owner`, moved in SQL to `awaiting` as routing leaves it."""
    packet = {**valid_packet(), "trigger_type": "harm_risk"}
    request: dict[str, Any] = {"packet": packet}
    if owner is not None:
        request["owner"] = owner
    response = client.post("/v1/escalations", headers=AGENT, json=request)
    assert response.status_code == 201, response.text
    escalation_id = str(response.json()["id"])
    engine = make_engine(settings)
    with transaction(engine) as session:
        row = session.get(Escalation, escalation_id)
        assert row is not None
        row.state, row.routed_at = "awaiting", datetime.now(UTC)  # type: ignore[assignment]
        row.reply_token_hash = token_hash(keys(settings), code(settings, escalation_id))
        session.add(row)
    engine.dispose()
    return escalation_id


def decision(settings: Settings, escalation_id: str) -> Decision | None:
    engine = make_engine(settings)
    with Session(engine) as session:
        found = session.exec(
            select(Decision).where(Decision.escalation_id == escalation_id)
        ).first()
    engine.dispose()
    return found


def replies(settings: Settings, escalation_id: str) -> list[Reply]:
    engine = make_engine(settings)
    with Session(engine) as session:
        found = list(
            session.exec(
                select(Reply).where(Reply.escalation_id == escalation_id).order_by(col(Reply.id))
            )
        )
    engine.dispose()
    return found


def keys(settings: Settings) -> str:
    return runtime_for(make_celery(settings)).answer_key


def code(settings: Settings, escalation_id: str) -> str:
    return reply_token(keys(settings), escalation_id)


# --- one table: every answer path, as the owner or as an unverified path -----------------


def by_api(client: TestClient, _s: Settings, case: str, option: str, token: str) -> int:
    body = {"option": option, "sender": "bob"}
    return client.post(
        f"/v1/escalations/{case}/replies", headers=bearer(token), json=body
    ).status_code


def by_dashboard(client: TestClient, _s: Settings, case: str, option: str, token: str) -> int:
    signed = client.post(
        "/dashboard/login", data={"token": token, "name": "bob"}, follow_redirects=False
    )
    assert signed.status_code == 303, signed.text
    answered = client.post(
        f"/dashboard/cases/{case}/answer", params={"option": option}, follow_redirects=False
    )
    if answered.status_code != 303:
        return answered.status_code
    # The console redirects after every answer (POST-redirect-GET) and names the outcome;
    # read it through the API's own status table.
    outcome = parse_qs(urlparse(answered.headers["location"]).query)["result"][0]
    return OUTCOME_STATUS[ReplyOutcome(outcome)]


def by_link(client: TestClient, settings: Settings, case: str, option: str, _t: str) -> int:
    signed = sign_link(keys(settings), case, option, "ops")
    return client.post(f"/a/{signed}").status_code


def by_ntfy(client: TestClient, settings: Settings, case: str, option: str, _t: str) -> int:
    body = f"{code(settings, case)} {option}".encode()
    return client.post("/v1/inbound/ntfy", content=body).status_code


def by_bridge(client: TestClient, settings: Settings, case: str, option: str, token: str) -> int:
    body = {"text": f"{code(settings, case)} {option}", "channel": "slack", "sender": "U123"}
    return client.post("/v1/inbound/text", headers=bearer(token), json=body).status_code


def by_slack(client: TestClient, settings: Settings, case: str, option: str, user: str) -> int:
    event = {
        "type": "event_callback",
        "event": {
            "type": "message",
            "user": user,
            "text": f"{code(settings, case)} {option}",
            "client_msg_id": f"m-{case}-{option}-{user}",
        },
    }
    raw = json.dumps(event).encode()
    stamp = str(int(time.time()))
    headers = {
        slack.TIMESTAMP_HEADER: stamp,
        slack.SIGNATURE_HEADER: slack.sign(SLACK_SECRET, stamp, raw),
        "content-type": "application/json",
    }
    return client.post("/v1/inbound/slack", content=raw, headers=headers).status_code


REFUSED = [
    # (path, owner, credential): the owner itself, however it names itself
    pytest.param(by_api, "api:operator", "op-plain", id="api-owner-token-typing-bob"),
    pytest.param(by_api, "api:ana", "op-ana", id="api-bound-name-typing-bob"),
    pytest.param(by_dashboard, "api:ana", "op-ana", id="dashboard-owner-token-typing-bob"),
    pytest.param(by_dashboard, "dashboard:operator", "op-plain", id="dashboard-unbound-owner"),
    pytest.param(by_slack, "slack:U123", "U123", id="slack-owner-signed"),
    # unverified paths: whoever the owner is
    pytest.param(by_link, "slack:U123", "", id="link"),
    pytest.param(by_ntfy, "slack:U123", "", id="ntfy-button"),
    pytest.param(by_bridge, "slack:U123", "op-plain", id="bridge-sender-U123"),
]


@pytest.mark.parametrize(("path", "owner", "credential"), REFUSED)
def test_the_owner_or_an_unverified_path_cannot_approve_a_harm_risk_case(
    client: TestClient, settings: Settings, path: Any, owner: str, credential: str
) -> None:
    # Given a harm_risk case whose run is owned by `owner`
    case = harm_case(client, settings, owner)
    # When it is approved through this path
    status = path(client, settings, case, "approve", credential)
    # Then it is refused as not allowed, and nothing is decided
    assert status == 403, status
    assert decision(settings, case) is None
    assert [r.outcome for r in replies(settings, case)] == ["not_allowed"]


@pytest.mark.parametrize(("path", "owner", "credential"), REFUSED)
def test_every_path_may_still_stop_a_harm_risk_case(
    client: TestClient, settings: Settings, path: Any, owner: str, credential: str
) -> None:
    # Given the same case; When the same path answers deny (the run stops)
    case = harm_case(client, settings, owner)
    status = path(client, settings, case, "deny", credential)
    # Then the stop is decided
    assert status == 200, status
    found = decision(settings, case)
    assert found is not None and found.option == "deny"


@pytest.mark.parametrize(
    ("path", "owner", "credential", "decided_by"),
    [
        pytest.param(by_api, "api:ana", "op-cy", "api:cy", id="api-another-name"),
        pytest.param(by_api, "api:ana", "op-plain", "api:operator", id="api-unbound-token"),
        pytest.param(by_dashboard, "api:ana", "op-cy", "dashboard:cy", id="dashboard-another"),
        pytest.param(by_slack, "slack:U123", "U999", "slack:U999", id="slack-another-user"),
    ],
)
def test_another_verified_responder_approves(
    client: TestClient,
    settings: Settings,
    path: Any,
    owner: str,
    credential: str,
    decided_by: str,
) -> None:
    # Given a harm_risk case with an owner; When someone the server knows is not them approves
    case = harm_case(client, settings, owner)
    status = path(client, settings, case, "approve", credential)
    # Then it is decided, recorded as the authenticated identity, never the typed name
    assert status == 200, status
    found = decision(settings, case)
    assert found is not None and found.option == "approve"
    assert found.decided_by == decided_by


def test_a_typed_sender_is_a_note_not_an_identity(client: TestClient, settings: Settings) -> None:
    # Given an ordinary case (no owner)
    case = harm_case(client, settings, None)
    # When an operator token answers calling itself "slack:U123"
    response = client.post(
        f"/v1/escalations/{case}/replies",
        headers=bearer("op-ana"),
        json={"option": "approve", "sender": "slack:U123"},
    )
    # Then the decision is ana's, and the typed name is kept as a note on the reply
    assert response.status_code == 200, response.text
    assert response.json()["decision"]["decided_by"] == "api:ana"
    (reply,) = replies(settings, case)
    assert reply.sender == "api:ana"
    assert reply.parsed["note"] == "slack:U123"


def test_without_an_owner_a_link_still_approves(client: TestClient, settings: Settings) -> None:
    # Given a harm_risk case with no owner; When its approve link is confirmed; Then it decides
    case = harm_case(client, settings, None)
    assert by_link(client, settings, case, "approve", "") == 200
    found = decision(settings, case)
    assert found is not None and found.decided_by == "link via ops"
