"""The operators' dashboard: sign in with a token, see open cases as cards, answer by link."""

from __future__ import annotations

import json
import re
from html import unescape as html_unescape
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from api.app import create_app
from api.sessions import COOKIE
from models.settings import Settings
from tests.api.console_seed import route
from workflows.examples import valid_packet

AGENT = {"Authorization": "Bearer agent-t"}
ANSWER_LINK = (
    r'<a(?: class="destructive")? '
    r'href="(/dashboard/cases/[0-9a-f]+/answer\?option=[^"]+)">([^<]+)</a>'
)


def raise_(client: TestClient, **changes: Any) -> str:
    response = client.post(
        "/v1/escalations", headers=AGENT, json={"packet": {**valid_packet(), **changes}}
    )
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def sign_in(client: TestClient, token: str = "op-t") -> None:
    response = client.post("/dashboard/login", data={"token": token}, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/dashboard"
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie


def test_the_dashboard_needs_an_operator_token(api_client: TestClient) -> None:
    assert api_client.get("/dashboard", follow_redirects=False).headers["location"] == (
        "/dashboard/login"
    )
    refused = api_client.post("/dashboard/login", data={"token": "agent-t"})
    assert refused.status_code == 401
    assert "not an operator or admin token" in refused.text
    assert COOKIE not in refused.cookies
    api_client.cookies.set(COOKIE, "forged.value.sig")
    assert api_client.get("/dashboard", follow_redirects=False).status_code == 303


def test_open_cases_show_as_cards_with_the_advisory_and_an_answer_link_each(
    api_client: TestClient,
) -> None:
    escalation_id = raise_(
        api_client, requested_action="Drop the <b>3</b> orphan records?", packet_id="d-1"
    )
    route(api_client, escalation_id)
    sign_in(api_client)
    page = api_client.get("/dashboard")
    assert page.status_code == 200
    html = page.text
    assert html.count("Drop the &lt;b&gt;3&lt;/b&gt; orphan records?") == 1  # escaped, once
    assert "Recommended" not in html  # outside pipelines the service has no recommendation
    links = {html_unescape(h): t for h, t in re.findall(ANSWER_LINK, html)}
    assert sorted(links.values()) == ["approve", "deny"]
    # A button opens a confirm page; nothing is decided by a GET, and nothing once signed out
    link = next(href for href, label in links.items() if label == "approve")
    confirm = api_client.get(link)
    assert confirm.status_code == 200 and "Answer “approve”" in confirm.text
    assert api_client.post(link, headers={"Origin": "https://evil.example"}).status_code == 403
    api_client.post("/dashboard/logout")
    assert api_client.get(link, follow_redirects=False).headers["location"] == "/dashboard/login"
    assert api_client.post(link).status_code == 403
    sign_in(api_client)
    case = api_client.get(f"/dashboard/cases/{escalation_id}")
    assert case.status_code == 200
    assert "accepted" in case.text and valid_packet()["task_summary"] in case.text


def test_a_refused_packet_shows_with_its_problems_and_no_answers(api_client: TestClient) -> None:
    bad = dict(valid_packet(), severity="urgent")
    assert (
        api_client.post("/v1/escalations", headers=AGENT, json={"packet": bad}).status_code == 422
    )
    sign_in(api_client)
    assert "/answer?" not in api_client.get("/dashboard").text
    assert api_client.get("/dashboard/cases/nope").status_code == 404


def test_a_pipeline_card_leads_with_the_recommended_command_and_says_the_caps(
    api_client: TestClient, tmp_path: Path
) -> None:
    (tmp_path / "phase_state.json").write_text(
        json.dumps({"phase": 2, "escalation_resets": 3, "escalation_trigger_reason": "stuck"})
    )
    response = api_client.post(
        "/v1/pipelines/escalations", headers=AGENT, json={"state_dir": str(tmp_path)}
    )
    assert response.status_code == 201, response.text
    route(api_client, response.json()["id"])
    sign_in(api_client)
    html = api_client.get("/dashboard").text
    assert "Reset cap reached (3 of 3 used): only PROCEED and STOP execute" in html
    buttons = [label for _href, label in re.findall(ANSWER_LINK, html)]
    assert sorted(buttons) == ["NUCLEAR_RESET", "PROCEED", "STOP"]
    # The destructive one is red on the card and carries its warning on its confirm page
    assert '<a class="destructive" href="/dashboard/cases/' in html
    warning = "Last resort — the same failure can recur if the underlying problem isn&#39;t"
    warning += " addressed."
    nuclear = next(
        html_unescape(h) for h, label in re.findall(ANSWER_LINK, html) if label == "NUCLEAR_RESET"
    )
    confirm = api_client.get(nuclear).text
    assert warning in confirm and "This cannot be undone." in confirm


def test_a_token_taken_out_of_the_configuration_ends_its_sessions(
    api_settings: Settings,
) -> None:
    with TestClient(create_app(api_settings)) as first:
        sign_in(first)
        cookie = first.cookies[COOKIE]
        assert first.get("/dashboard").status_code == 200
    rotated = api_settings.model_copy(update={"api_tokens": "operator:new-op-t"})
    with TestClient(create_app(rotated)) as second:
        second.cookies.set(COOKIE, cookie)
        assert second.get("/dashboard", follow_redirects=False).status_code == 303
