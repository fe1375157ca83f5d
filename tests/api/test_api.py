"""The HTTP API end to end on the embedded defaults: SQLite database, folder broker, no worker."""

from __future__ import annotations

import logging
import re
import secrets
import sqlite3
import string
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from models.db import make_engine, transaction
from models.settings import Settings
from models.tables import Escalation
from workflows.examples import incomplete_packet, valid_packet
from workflows.states import State

AGENT = {"Authorization": "Bearer agent-t"}
OPERATOR = {"Authorization": "Bearer op-t"}
ADMIN = {"Authorization": "Bearer admin-t"}
TABLES = ("escalations", "events", "deliveries", "replies", "decisions")
CASE_ID = re.compile(r"[0-9a-f]{12}")

# --- helpers -----------------------------------------------------------------------------------


def _random(alphabet: str, length: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(length))


def fake_github_token() -> str:
    """A GitHub-token-shaped value made up at runtime: no secret lives in the repo."""
    return "ghp_" + _random(string.ascii_letters + string.digits, 36)


def fake_aws_key_id() -> str:
    return "AKIA" + _random(string.ascii_uppercase + string.digits, 16)


def fake_password() -> str:
    return "Pw" + _random(string.ascii_letters + string.digits, 18)


def raise_case(
    client: TestClient,
    packet: dict[str, Any] | None = None,
    *,
    headers: dict[str, str] = AGENT,
    **extra: Any,
) -> dict[str, Any]:
    """POST a request that must be accepted as a new case; returns the response body."""
    response = client.post(
        "/v1/escalations", json={"packet": packet or valid_packet(), **extra}, headers=headers
    )
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def packet_for(run_id: str, packet_id: str, severity: str = "medium") -> dict[str, Any]:
    """The valid example, re-labelled; high/critical get a waiting behavior they allow."""
    packet = valid_packet()
    packet.update(run_id=run_id, packet_id=packet_id, severity=severity)
    if severity in ("high", "critical"):
        packet["waiting_behavior"] = "paused"
    return packet


def move_to(settings: Settings, escalation_id: str, state: State) -> None:
    """Do in SQL what the snapshot and route stages would do to the row, without a worker."""
    engine = make_engine(settings)
    try:
        with transaction(engine) as session:
            row = session.get(Escalation, escalation_id)
            assert row is not None
            row.state = state.value
            row.routed_at = row.updated_at = datetime.now(UTC)
            session.add(row)
    finally:
        engine.dispose()


def reply(
    client: TestClient,
    escalation_id: str,
    body: dict[str, Any],
    *,
    headers: dict[str, str] = OPERATOR,
) -> httpx.Response:
    response: httpx.Response = client.post(
        f"/v1/escalations/{escalation_id}/replies", json=body, headers=headers
    )
    return response


def history(client: TestClient, escalation_id: str) -> dict[str, Any]:
    response = client.get(f"/v1/escalations/{escalation_id}/events", headers=OPERATOR)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def database_file(settings: Settings) -> Path:
    return Path(settings.resolved_database_url.removeprefix("sqlite:///"))


def table_rows(settings: Settings) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, read straight from the SQLite file."""
    with sqlite3.connect(database_file(settings)) as db:
        return {table: db.execute(f"SELECT * FROM {table}").fetchall() for table in TABLES}


def where_stored(settings: Settings, value: str) -> list[str]:
    """Tables whose rows hold `value`, and files under home whose bytes hold it."""
    found = [
        table
        for table, rows in table_rows(settings).items()
        if any(value in repr(row) for row in rows)
    ]
    found += [
        str(path)
        for path in settings.home.rglob("*")
        if path.is_file() and value.encode() in path.read_bytes()
    ]
    return found


def listed_ids(client: TestClient, **filters: str) -> list[str]:
    response = client.get("/v1/escalations", params=filters, headers=OPERATOR)
    assert response.status_code == 200, response.text
    return [row["id"] for row in response.json()]


# --- health and auth ---------------------------------------------------------------------------


def test_given_no_token_when_healthz_is_read_then_200_with_the_design(
    api_client: TestClient,
) -> None:
    # Given / When
    response = api_client.get("/healthz")
    # Then
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "design": "example-fast", "design_version": 1}


ENDPOINTS = [
    ("GET", "/v1/escalations"),
    ("POST", "/v1/escalations"),
    ("GET", "/v1/escalations/0123456789ab"),
    ("GET", "/v1/escalations/0123456789ab/events"),
    ("POST", "/v1/escalations/0123456789ab/replies"),
]


@pytest.mark.parametrize(("method", "path"), ENDPOINTS)
@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer not-a-token"}, {"Authorization": "Basic YWdlbnQ6YWdlbnQtdA=="}],
    ids=["no-token", "unknown-token", "not-bearer"],
)
def test_given_no_valid_token_when_any_v1_endpoint_is_called_then_401(
    api_client: TestClient, method: str, path: str, headers: dict[str, str]
) -> None:
    # Given a caller without a known bearer token / When
    response = api_client.request(method, path, json={"option": "approve"}, headers=headers)
    # Then
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"] == "Bearer"


def test_given_an_operator_when_raising_an_escalation_then_403_and_nothing_stored(
    api_client: TestClient, api_settings: Settings
) -> None:
    # Given / When
    response = api_client.post("/v1/escalations", json={"packet": valid_packet()}, headers=OPERATOR)
    # Then
    assert response.status_code == 403
    assert "operator" in response.json()["detail"]
    assert table_rows(api_settings)["escalations"] == []


def test_given_an_agent_when_replying_then_403_and_no_reply_recorded(
    api_client: TestClient, api_settings: Settings
) -> None:
    # Given an awaiting case
    case = raise_case(api_client)
    move_to(api_settings, case["id"], State.AWAITING)
    # When the agent tries to answer its own escalation
    response = reply(api_client, case["id"], {"option": "approve"}, headers=AGENT)
    # Then
    assert response.status_code == 403
    assert table_rows(api_settings)["replies"] == []
    assert table_rows(api_settings)["decisions"] == []


def test_given_an_admin_when_raising_and_replying_then_both_are_allowed(
    api_client: TestClient, api_settings: Settings
) -> None:
    # Given an admin raises a case
    case = raise_case(api_client, headers=ADMIN)
    move_to(api_settings, case["id"], State.AWAITING)
    # When the admin answers it
    response = reply(api_client, case["id"], {"option": "approve"}, headers=ADMIN)
    # Then
    assert response.status_code == 200, response.text
    assert response.json()["decision"]["decided_by"] == "api:admin"


@pytest.mark.parametrize("headers", [AGENT, OPERATOR, ADMIN], ids=["agent", "operator", "admin"])
def test_given_any_role_when_reading_cases_then_allowed(
    api_client: TestClient, headers: dict[str, str]
) -> None:
    # Given
    case = raise_case(api_client)
    # When / Then
    for path in (
        "/v1/escalations",
        f"/v1/escalations/{case['id']}",
        f"/v1/escalations/{case['id']}/events",
    ):
        assert api_client.get(path, headers=headers).status_code == 200, path


# --- raising -----------------------------------------------------------------------------------


def test_given_the_valid_example_when_raised_then_201_with_a_new_case(
    api_client: TestClient, api_settings: Settings
) -> None:
    # Given / When
    response = api_client.post("/v1/escalations", json={"packet": valid_packet()}, headers=AGENT)
    # Then
    assert response.status_code == 201, response.text
    body = response.json()
    assert CASE_ID.fullmatch(body["id"]), body
    assert body["state"] == "received"
    assert body["created"] is True
    assert body["warnings"] == []
    # And the url leads to the case
    url = httpx.URL(body["url"])
    assert url.scheme in ("http", "https")
    assert url.path == f"/v1/escalations/{body['id']}"
    assert api_client.get(url.path, headers=AGENT).json()["id"] == body["id"]


def test_given_a_raised_packet_when_raised_again_then_200_the_same_case(
    api_client: TestClient,
) -> None:
    # Given
    first = raise_case(api_client)
    # When the run sends the same packet again (a retry after a lost response)
    response = api_client.post("/v1/escalations", json={"packet": valid_packet()}, headers=AGENT)
    # Then
    assert response.status_code == 200, response.text
    assert response.json()["created"] is False
    assert response.json()["id"] == first["id"]
    assert listed_ids(api_client) == [first["id"]]


def test_given_a_packet_with_warnings_when_raised_then_accepted_with_them(
    api_client: TestClient,
) -> None:
    # Given a high case with one evidence entry
    packet = packet_for("run-1", "esc-1", "high")
    packet["evidence"] = packet["evidence"][:1]
    # When
    body = raise_case(api_client, packet)
    # Then
    assert body["warnings"] == ["severity high: only 1 evidence entry, 2 advised"]


@pytest.mark.parametrize(
    ("request_body", "errors"),
    [
        (
            {"packet": incomplete_packet()},
            [
                "packet.requested_action: missing or empty",
                "packet.evidence: missing, not a list, or empty",
            ],
        ),
        ({"packet": [valid_packet()]}, ["packet is not a JSON object"]),
        ({}, ["packet is not a JSON object"]),
        (
            {"packet": {**valid_packet(), "severity": "urgent", "attempted": []}},
            ["packet.severity: bad value 'urgent'", "packet.attempted: empty list"],
        ),
    ],
    ids=["incomplete-example", "packet-a-list", "no-packet", "bad-enum-and-list"],
)
def test_given_a_malformed_packet_when_raised_then_422_with_the_fixed_lines(
    api_client: TestClient,
    api_settings: Settings,
    request_body: dict[str, Any],
    errors: list[str],
) -> None:
    # Given / When
    response = api_client.post("/v1/escalations", json=request_body, headers=AGENT)
    # Then
    assert response.status_code == 422, response.text
    assert response.json() == {"detail": "packet refused", "errors": errors}
    assert table_rows(api_settings)["escalations"] == []


def _in_packet(field: str) -> Callable[[dict[str, Any], str], None]:
    def put(request: dict[str, Any], secret: str) -> None:
        packet = request["packet"]
        if field == "attempted":
            packet["attempted"].append(f"Retried with {secret}")
        else:
            packet[field] = f"{packet[field]} Used {secret} to call the API."

    return put


def _in_part(part: str, key: str) -> Callable[[dict[str, Any], str], None]:
    def put(request: dict[str, Any], secret: str) -> None:
        if part == "options":
            request["options"] = [{"label": "approve", key: f"Use {secret} to log in"}, "deny"]
        else:
            request[part] = {key: secret}

    return put


def _url_credentials() -> str:
    return f"https://deploy:{fake_password()}@hooks.example.com/wake"


SECRET_CASES = [
    pytest.param(
        _in_packet("trigger_detail"),
        fake_github_token,
        "packet.trigger_detail: contains a secret (GitHub token)",
        id="packet.trigger_detail",
    ),
    pytest.param(
        _in_packet("attempted"),
        fake_aws_key_id,
        "packet.attempted[2]: contains a secret (AWS access key)",
        id="packet.attempted",
    ),
    pytest.param(
        _in_part("snapshot", "verified"),
        fake_github_token,
        "snapshot.verified: contains a secret (GitHub token)",
        id="snapshot.verified",
    ),
    pytest.param(
        _in_part("options", "description"),
        fake_github_token,
        "options[0].description: contains a secret (GitHub token)",
        id="options[0].description",
    ),
    pytest.param(
        _in_part("wake", "webhook"),
        _url_credentials,
        "wake.webhook: contains a secret (URL credentials)",
        id="wake.webhook",
    ),
]


@pytest.mark.parametrize(("put", "make_secret", "error"), SECRET_CASES)
def test_given_a_secret_in_the_request_when_raised_then_422_and_it_is_stored_nowhere(
    api_client: TestClient,
    api_settings: Settings,
    caplog: pytest.LogCaptureFixture,
    put: Callable[[dict[str, Any], str], None],
    make_secret: Callable[[], str],
    error: str,
) -> None:
    # Given a request carrying a credential made up for this test
    caplog.set_level(logging.DEBUG)
    secret = make_secret()
    request: dict[str, Any] = {"packet": valid_packet()}
    put(request, secret)
    # When
    response = api_client.post("/v1/escalations", json=request, headers=AGENT)
    # Then it is refused, naming the field and the kind, never the value
    assert response.status_code == 422, response.text
    assert response.json()["errors"] == [error]
    assert secret not in response.text
    # And the value is in no table, no file under home, and no log record
    assert where_stored(api_settings, secret) == []
    assert table_rows(api_settings)["escalations"] == []
    assert secret not in caplog.text


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        ({"options": "approve or deny"}, "options: must be a list of {label, value, description}"),
        ({"options": [{"label": " "}]}, "options[0].label: missing or empty"),
        ({"options": ["Skip", {"label": "skip"}]}, "options: two options share a label"),
        (
            {"options": [{"label": "go", "resumes": "yes"}]},
            "options[0].resumes: must be true or false",
        ),
        ({"snapshot": ["abc123"]}, "snapshot: must be an object"),
        ({"snapshot": {"verified": 3}}, "snapshot.verified: must be text"),
        (
            {"snapshot": {"scheduled_task_ids": "abc"}},
            "snapshot.scheduled_task_ids: must be a list of task ids",
        ),
        (
            {"snapshot": {"fingerprint": {"kind": "svn"}}},
            "snapshot.fingerprint.kind: 'svn' is not one of none, git, file, http",
        ),
        (
            {"snapshot": {"fingerprint": {"kind": "git"}}},
            "snapshot.fingerprint.path: required for kind git",
        ),
        ({"wake": "run-8842"}, "wake: must be an object like {task: NAME, webhook: URL}"),
        (
            {"wake": {"email": "ops@example.com"}},
            "wake.email: unknown (use blocked_file, command_file, decision_file, fallback_file, "
            "queue, request_file, task, webhook)",
        ),
        ({"wake": {"task": " "}}, "wake.task: must be non-empty text"),
        (
            {"wake": {"task": "my.wake", "queue": "my agent"}},
            "wake.queue: must be a Celery queue name (letters, digits and . _ : @ / -, at most "
            "200 characters)",
        ),
        (
            {"wake": {"task": "my.wake", "queue": "escalation"}},
            "wake.queue: 'escalation' is this service's own queue: its workers discard your "
            "task; name the queue your worker consumes",
        ),
        ({"wake": {"webhook": "ftp://example.com/x"}}, "wake.webhook: must be an http(s) URL"),
        ({"callback": "x"}, "callback: unknown field (use packet, snapshot, options, wake, owner)"),
    ],
)
def test_given_a_bad_shape_beside_the_packet_when_raised_then_422_naming_the_field(
    api_client: TestClient, api_settings: Settings, extra: dict[str, Any], error: str
) -> None:
    # Given a valid packet with a malformed companion part / When
    response = api_client.post(
        "/v1/escalations", json={"packet": valid_packet(), **extra}, headers=AGENT
    )
    # Then
    assert response.status_code == 422, response.text
    assert response.json()["errors"] == [error]
    assert table_rows(api_settings)["escalations"] == []


# --- reading -----------------------------------------------------------------------------------


def test_given_several_cases_when_listed_with_filters_then_only_the_matching_newest_first(
    api_client: TestClient, api_settings: Settings
) -> None:
    # Given three cases in two runs, one moved on to awaiting
    medium = raise_case(api_client, packet_for("run-a", "esc-1", "medium"))["id"]
    high = raise_case(api_client, packet_for("run-b", "esc-2", "high"))["id"]
    low = raise_case(api_client, packet_for("run-b", "esc-3", "low"))["id"]
    move_to(api_settings, medium, State.AWAITING)
    # When / Then
    assert listed_ids(api_client) == [low, high, medium]
    assert listed_ids(api_client, state="received") == [low, high]
    assert listed_ids(api_client, state="awaiting") == [medium]
    assert listed_ids(api_client, severity="high") == [high]
    assert listed_ids(api_client, run="run-b") == [low, high]
    assert listed_ids(api_client, run="run-b", severity="low") == [low]
    assert listed_ids(api_client, state="closed") == []
    assert listed_ids(api_client, limit="1") == [low]


def test_given_newer_cases_that_ended_when_the_open_ones_are_listed_then_an_older_one_is_too(
    api_client: TestClient, api_settings: Settings
) -> None:
    # Given an open case, then three newer ones that ended (closed, refused, parked)
    older = raise_case(api_client, packet_for("run-a", "esc-1", "medium"))["id"]
    ended = [
        raise_case(api_client, packet_for(f"run-{n}", f"esc-{n}", "low"))["id"] for n in (2, 3, 4)
    ]
    for case_id, state in zip(ended, (State.CLOSED, State.REFUSED, State.DEAD_LETTER), strict=True):
        move_to(api_settings, case_id, state)
    # When the open cases are listed, fewer than there are cases in all
    # Then the older open case is found (the MCP resource asks this way), and no ended one
    assert listed_ids(api_client, open="true", limit="2") == [older]
    assert listed_ids(api_client, limit="2") == ended[:0:-1]


def test_given_a_case_when_listed_then_its_summary_carries_the_question(
    api_client: TestClient,
) -> None:
    # Given
    case = raise_case(api_client)
    # When
    (row,) = api_client.get("/v1/escalations", headers=AGENT).json()
    # Then
    assert row["id"] == case["id"]
    assert row["run_id"] == "run-8842"
    assert row["packet_id"] == "esc-2026-10-16-005"
    assert (row["severity"], row["trigger_type"], row["state"]) == (
        "medium",
        "uncertain",
        "received",
    )
    assert row["question"] == valid_packet()["requested_action"]


def test_given_a_case_when_its_detail_is_read_then_packet_options_and_no_decision(
    api_client: TestClient,
) -> None:
    # Given
    case = raise_case(api_client)
    # When
    response = api_client.get(f"/v1/escalations/{case['id']}", headers=OPERATOR)
    # Then
    assert response.status_code == 200
    detail = response.json()
    assert detail["id"] == case["id"]
    assert detail["packet"] == valid_packet()
    assert [option["label"] for option in detail["options"]] == ["approve", "deny"]
    assert detail["decision"] is None
    assert detail["state"] == "received"
    assert detail["deliveries"] == []


def test_given_no_recipient_or_waiting_when_raised_then_the_design_fills_them(
    api_client: TestClient,
) -> None:
    # Given a packet that leaves who decides and how the run waits to the design
    packet = {k: v for k, v in valid_packet().items() if k not in ("recipient", "waiting_behavior")}
    # When raised over HTTP
    case = raise_case(api_client, packet)
    # Then the medium tier's primary and waiting behavior are in the stored packet
    stored = api_client.get(f"/v1/escalations/{case['id']}", headers=OPERATOR).json()["packet"]
    assert (stored["recipient"], stored["waiting_behavior"]) == ("ops", "read_only")


def test_given_custom_options_when_raised_then_the_detail_shows_them(
    api_client: TestClient,
) -> None:
    # Given / When
    case = raise_case(
        api_client,
        options=[{"label": "skip", "description": "Leave the 3 out."}, "placeholder"],
    )
    detail = api_client.get(f"/v1/escalations/{case['id']}", headers=OPERATOR).json()
    # Then
    assert [(o["label"], o["value"]) for o in detail["options"]] == [
        ("skip", "skip"),
        ("placeholder", "placeholder"),
    ]


@pytest.mark.parametrize("suffix", ["", "/events"])
def test_given_an_unknown_id_when_read_then_404(api_client: TestClient, suffix: str) -> None:
    # Given / When
    response = api_client.get(f"/v1/escalations/0123456789ab{suffix}", headers=OPERATOR)
    # Then
    assert response.status_code == 404
    assert response.json() == {"detail": "no escalation 0123456789ab"}


def test_given_an_unknown_id_when_replied_to_then_404(api_client: TestClient) -> None:
    # Given / When
    response = reply(api_client, "0123456789ab", {"option": "approve"})
    # Then
    assert response.status_code == 404


def test_given_a_new_case_when_its_events_are_read_then_accepted_is_recorded(
    api_client: TestClient,
) -> None:
    # Given
    case = raise_case(api_client)
    # When
    body = history(api_client, case["id"])
    # Then
    assert body["id"] == case["id"]
    assert [event["kind"] for event in body["events"]] == ["accepted"]
    assert body["events"][0]["state"] == "received"
    assert body["replies"] == []


# --- replies -----------------------------------------------------------------------------------


def test_given_a_case_still_received_when_a_deciding_reply_arrives_then_409_still_routed(
    api_client: TestClient, api_settings: Settings
) -> None:
    # Given a case no worker has routed yet
    case = raise_case(api_client)
    # When
    response = reply(api_client, case["id"], {"option": "approve"})
    # Then it is refused for now, and nothing is decided
    assert response.status_code == 409, response.text
    assert "still being routed" in response.json()["message"]
    assert table_rows(api_settings)["decisions"] == []
    assert api_client.get(f"/v1/escalations/{case['id']}", headers=OPERATOR).json()["state"] == (
        "received"
    )


def test_given_a_case_still_received_when_a_deciding_reply_arrives_then_it_is_recorded(
    api_client: TestClient,
) -> None:
    # Given
    case = raise_case(api_client)
    # When
    response = reply(api_client, case["id"], {"option": "approve", "sender": "early-bird"})
    # Then it is refused for now but kept, like every other reply
    assert response.status_code == 409
    replies = history(api_client, case["id"])["replies"]
    assert [(r["sender"], r["text"]) for r in replies] == [("api:operator", "approve")]


def test_given_a_case_still_received_when_a_comment_arrives_then_it_is_recorded(
    api_client: TestClient,
) -> None:
    # Given
    case = raise_case(api_client)
    # When
    response = reply(api_client, case["id"], {"text": "looking at it now."})
    # Then
    assert response.status_code == 200
    assert response.json()["outcome"] == "comment"
    assert [r["outcome"] for r in history(api_client, case["id"])["replies"]] == ["comment"]


def test_given_an_awaiting_case_when_replies_arrive_then_the_first_deciding_one_wins(
    api_client: TestClient, api_settings: Settings
) -> None:
    # Given a routed case waiting for its answer
    case_id = raise_case(api_client)["id"]
    move_to(api_settings, case_id, State.AWAITING)

    # When a question comes back / Then it is recorded, decides nothing, and lists the answers
    question = reply(api_client, case_id, {"text": "what does skip mean?"})
    assert question.status_code == 200, question.text
    assert question.json()["outcome"] == "comment"
    assert question.json()["decision"] is None
    assert "approve, deny" in question.json()["message"]

    # When an option that does not exist is named / Then 422 with the valid ones
    unknown = reply(api_client, case_id, {"option": "nope"})
    assert unknown.status_code == 422
    assert "'nope'" in unknown.json()["message"]
    assert "approve, deny" in unknown.json()["message"]

    # When the body says nothing / Then 422
    for empty in ({}, {"text": "   "}, {"option": 5}, {"text": ["approve"]}):
        assert reply(api_client, case_id, empty).status_code == 422, empty

    # When the operator approves / Then the case is decided by them, on the api channel
    decided = reply(api_client, case_id, {"option": "approve"})
    assert decided.status_code == 200, decided.text
    body = decided.json()
    assert body["outcome"] == "decided"
    assert body["option"] == "approve"
    assert body["decision"]["option"] == "approve"
    assert body["decision"]["decided_by"] == "api:operator"
    assert body["decision"]["channel"] == "api"
    assert body["decision"]["is_default"] is False

    # When a second deciding reply arrives / Then 409, saying what was decided and by whom
    late = reply(api_client, case_id, {"option": "deny", "sender": "second-operator"})
    assert late.status_code == 409, late.text
    assert late.json()["outcome"] == "superseded"
    assert "approve" in late.json()["message"]
    assert "api:operator" in late.json()["message"]
    assert late.json()["decision"]["option"] == "approve"

    # And the case, its events and its replies tell the same story
    detail = api_client.get(f"/v1/escalations/{case_id}", headers=OPERATOR).json()
    assert detail["state"] == "decided"
    assert detail["decision"]["option"] == "approve"
    assert detail["decision"]["decided_by"] == "api:operator"
    story = history(api_client, case_id)
    assert [e["kind"] for e in story["events"]] == ["accepted", "decided"]
    assert [(r["sender"], r["text"], r["outcome"]) for r in story["replies"]] == [
        ("api:operator", "what does skip mean?", "comment"),
        ("api:operator", "nope", "unknown_option"),
        ("api:operator", "approve", "decided"),
        ("api:operator", "deny", "superseded"),
    ]
    assert len(table_rows(api_settings)["decisions"]) == 1


def test_given_custom_options_when_free_text_starts_with_one_then_it_decides(
    api_client: TestClient, api_settings: Settings
) -> None:
    # Given the run's own two answers
    case_id = raise_case(api_client, options=["skip", "placeholder"])["id"]
    move_to(api_settings, case_id, State.FOLLOWED_UP)
    # When the operator writes a sentence starting with one
    response = reply(api_client, case_id, {"text": "Placeholder, please", "sender": "dana"})
    # Then
    assert response.status_code == 200, response.text
    assert response.json()["decision"]["option"] == "placeholder"
    assert response.json()["decision"]["decided_by"] == "api:operator"  # the typed sender is a note
    (stored,) = history(api_client, case_id)["replies"]
    assert (stored["option"], stored["matched_by"], stored["outcome"]) == (
        "placeholder",
        "prefix",
        "decided",
    )


def test_given_a_reply_holding_a_secret_when_posted_then_the_value_is_stored_nowhere(
    api_client: TestClient, api_settings: Settings
) -> None:
    # Given an awaiting case
    case_id = raise_case(api_client)["id"]
    move_to(api_settings, case_id, State.AWAITING)
    secret = fake_github_token()
    # When the operator pastes a credential into a comment
    response = reply(api_client, case_id, {"text": f"use {secret} for the target API"})
    # Then it is neither echoed nor stored
    assert secret not in response.text
    assert where_stored(api_settings, secret) == []


def test_given_an_awaiting_case_when_20_deciding_replies_race_then_exactly_one_wins(
    api_client: TestClient, api_settings: Settings
) -> None:
    # Given
    case_id = raise_case(api_client)["id"]
    move_to(api_settings, case_id, State.AWAITING)
    senders = [f"operator-{n}" for n in range(20)]
    responses: dict[str, httpx.Response] = {}
    start = threading.Barrier(len(senders))

    def answer(n: int, sender: str) -> None:
        start.wait()
        option = "approve" if n % 2 else "deny"
        responses[sender] = reply(api_client, case_id, {"option": option, "sender": sender})

    threads = [
        threading.Thread(target=answer, args=(n, sender)) for n, sender in enumerate(senders)
    ]
    # When they all answer at once
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then exactly one decided, every other one was told it was superseded by that one
    assert sorted(responses) == sorted(senders)
    codes = sorted(response.status_code for response in responses.values())
    assert codes == [200] + [409] * 19, [r.text for r in responses.values()]
    (winner,) = [s for s, r in responses.items() if r.status_code == 200]
    winning = responses[winner].json()["decision"]
    assert winning["decided_by"] == "api:operator"  # the typed senders are notes
    for sender, response in responses.items():
        if sender != winner:
            assert response.json()["outcome"] == "superseded"
            assert response.json()["decision"] == winning
    # And the database holds one decision and all twenty replies
    rows = table_rows(api_settings)
    assert len(rows["decisions"]) == 1
    outcomes = sorted(r["outcome"] for r in history(api_client, case_id)["replies"])
    assert outcomes == ["decided"] + ["superseded"] * 19
