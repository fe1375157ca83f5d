"""Headers (issue #14, item 10): the dashboard and the answer pages are sent with a CSP that
forbids framing, `nosniff`, no Referer (answer links are credentials) and no caching."""

from __future__ import annotations

import httpx
from fastapi.testclient import TestClient

from models import state_files
from models.settings import Settings
from tests.security import embedded
from tests.security.embedded import AGENT
from workers.answering import sign_link
from workflows.examples import valid_packet

settings = embedded.settings  # the fixtures, under the names the tests use
client = embedded.client


def assert_page_headers(response: httpx.Response) -> None:
    where = f"{response.request.method} {response.request.url.path} ({response.status_code})"
    csp = response.headers.get("content-security-policy", "")
    directives = {part.strip().split(" ", 1)[0]: part.strip() for part in csp.split(";") if part}
    assert directives.get("frame-ancestors") == "frame-ancestors 'none'", where
    assert directives.get("default-src") == "default-src 'none'", where
    if response.request.url.path.startswith("/dashboard"):  # the console's own script only
        assert directives.get("script-src") == "script-src 'self'", where
        assert directives.get("connect-src") == "connect-src 'self'", where
    else:  # an answer link's page: no script at all
        assert "script-src" not in directives, where
    assert response.headers.get("x-content-type-options") == "nosniff", where
    assert response.headers.get("referrer-policy") == "no-referrer", where
    assert response.headers.get("cache-control") == "no-store", where


def test_every_dashboard_response_carries_the_page_headers(client: TestClient) -> None:
    # Given a case, and an operator on the sign-in page
    raised = client.post("/v1/escalations", headers=AGENT, json={"packet": valid_packet()})
    escalation_id = raised.json()["id"]
    responses = [client.get("/dashboard", follow_redirects=False)]  # the redirect, too
    responses.append(client.get("/dashboard/login"))
    responses.append(client.post("/dashboard/login", data={"token": "wrong"}))
    # When they sign in and look around
    responses.append(
        client.post("/dashboard/login", data={"token": "op-t"}, follow_redirects=False)
    )
    responses += [
        client.get("/dashboard"),
        client.get(f"/dashboard/cases/{escalation_id}"),
        client.get(f"/dashboard/cases/{escalation_id}/answer", params={"option": "approve"}),
        client.get("/dashboard/cases/nope"),
    ]
    # Then every one of those responses carries the headers
    for response in responses:
        assert_page_headers(response)


def test_answer_link_pages_carry_the_page_headers(client: TestClient, settings: Settings) -> None:
    # Given a case and a valid answer link to it
    raised = client.post("/v1/escalations", headers=AGENT, json={"packet": valid_packet()})
    escalation_id = raised.json()["id"]
    key = state_files.answer_key(settings.home)
    signed = sign_link(key, escalation_id, "approve", "ops")
    # When the link is opened, answered, or forged / Then each page carries the headers
    confirm = client.get(f"/a/{signed}")
    assert confirm.status_code == 200 and "Confirm your answer" in confirm.text
    for response in (confirm, client.post(f"/a/{signed}"), client.get("/a/forged.link")):
        assert_page_headers(response)


def test_the_json_api_is_sent_nosniff(client: TestClient) -> None:
    response = client.get("/healthz")
    assert response.headers.get("x-content-type-options") == "nosniff"
