"""Signing out ends the session (issue #14, item 9): dashboard sessions live on the server.

A cookie copied before sign-out (a shared machine, a proxy log, a stolen backup) must decide
nothing afterwards, and a token taken out of the configuration ends its sessions for good,
even if the same token is configured again later.
"""

from __future__ import annotations

import re
import sqlite3
from html import unescape
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from models.settings import Settings
from tests.security import embedded
from tests.security.embedded import embedded_settings
from tests.support.rows import mark_awaiting
from workflows.examples import valid_packet

AGENT = {"Authorization": "Bearer agent-t"}
COOKIE = "escalate_dashboard"
ANSWER_LINK = r'<a href="(/dashboard/cases/[0-9a-f]+/answer\?option=[^"]+)">([^<]+)</a>'


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return embedded_settings(tmp_path, api_tokens="agent:agent-t,operator:op-t,admin:admin-t")


client = embedded.client


def sign_in(client: TestClient, token: str = "op-t") -> str:
    response = client.post("/dashboard/login", data={"token": token}, follow_redirects=False)
    assert response.status_code == 303, response.text
    return str(client.cookies[COOKIE])


def awaiting_case(client: TestClient, settings: Settings) -> str:
    """A raised case moved in SQL to `awaiting`, as the route stage would leave it."""
    response = client.post("/v1/escalations", headers=AGENT, json={"packet": valid_packet()})
    assert response.status_code == 201, response.text
    escalation_id = str(response.json()["id"])
    mark_awaiting(settings, escalation_id)
    return escalation_id


def rows(settings: Settings, sql: str) -> list[tuple[object, ...]]:
    database = settings.resolved_database_url.removeprefix("sqlite:///")
    with sqlite3.connect(database) as db:
        return db.execute(sql).fetchall()


def test_a_cookie_replayed_after_sign_out_decides_nothing(
    client: TestClient, settings: Settings
) -> None:
    # Given a signed-in operator looking at an open case, and a copy of their cookie
    escalation_id = awaiting_case(client, settings)
    cookie = sign_in(client)
    html = client.get("/dashboard").text
    approve = next(
        unescape(href) for href, label in re.findall(ANSWER_LINK, html) if label == "approve"
    )
    # When they sign out
    signed_out = client.post("/dashboard/logout", follow_redirects=False)
    assert signed_out.status_code == 303
    # Then the copied cookie opens nothing and decides nothing
    replay = TestClient(client.app)  # another browser, same service
    replay.cookies.set(COOKIE, cookie)
    page = replay.get("/dashboard", follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"] == "/dashboard/login"
    assert replay.get(approve, follow_redirects=False).status_code == 303
    assert replay.post(approve).status_code == 403
    assert replay.post(f"/dashboard/cases/{escalation_id}/retry").status_code == 403
    assert rows(settings, "SELECT * FROM replies") == []
    assert rows(settings, "SELECT * FROM decisions") == []


def test_the_cookie_is_a_key_to_a_server_side_session_not_a_signed_claim(
    client: TestClient, settings: Settings
) -> None:
    # Given / When an operator signs in with a name
    client.post("/dashboard/login", data={"token": "op-t", "name": "ana"})
    cookie = client.cookies[COOKIE]
    # Then the cookie names no role, no name and no token; the server holds the session,
    # keyed by a hash of the cookie (a copy of the database signs nobody in)
    for word in ("operator", "ana", "op-t"):
        assert word not in cookie
    [(key, role, name, revoked)] = rows(
        settings, "SELECT id, role, name, revoked_at FROM dashboard_sessions"
    )
    assert (role, name, revoked) == ("operator", "ana", None)
    assert key != cookie and cookie not in str(key)


def test_sign_out_revokes_the_session_on_the_server(client: TestClient, settings: Settings) -> None:
    # Given a signed-in operator
    sign_in(client)
    # When they sign out / Then the session row is revoked and the browser's cookie cleared
    client.post("/dashboard/logout")
    [(revoked,)] = rows(settings, "SELECT revoked_at FROM dashboard_sessions")
    assert revoked is not None
    assert COOKIE not in client.cookies


def test_sign_out_is_a_same_origin_post(client: TestClient, settings: Settings) -> None:
    # Given a signed-in operator
    sign_in(client)
    # When another site makes their browser post a sign-out / Then it is refused, and
    # the session lives on (nobody else can end it either)
    forged = client.post(
        "/dashboard/logout", headers={"Origin": "https://evil.example"}, follow_redirects=False
    )
    assert forged.status_code == 403
    assert client.get("/dashboard", follow_redirects=False).status_code == 200
    # And a GET (an <img> tag, a link previewer) signs nobody out
    assert client.get("/dashboard/logout", follow_redirects=False).status_code == 405
    assert client.get("/dashboard", follow_redirects=False).status_code == 200
    [(revoked,)] = rows(settings, "SELECT revoked_at FROM dashboard_sessions")
    assert revoked is None


def test_a_removed_token_ends_its_sessions_even_if_it_comes_back(settings: Settings) -> None:
    # Given an operator signed in with the token op-t
    with TestClient(create_app(settings)) as first:
        cookie = sign_in(first)
    # When op-t is taken out of the configuration and the service restarts
    rotated = settings.model_copy(update={"api_tokens": "agent:agent-t,operator:new-op-t"})
    with TestClient(create_app(rotated)) as second:
        second.cookies.set(COOKIE, cookie)
        assert second.get("/dashboard", follow_redirects=False).status_code == 303
    [(revoked,)] = rows(settings, "SELECT revoked_at FROM dashboard_sessions")
    assert revoked is not None
    # Then configuring op-t again later does not bring the old session back
    with TestClient(create_app(settings)) as third:
        third.cookies.set(COOKIE, cookie)
        assert third.get("/dashboard", follow_redirects=False).status_code == 303


def test_a_token_demoted_to_agent_ends_its_sessions(settings: Settings) -> None:
    # Given an operator signed in with op-t
    with TestClient(create_app(settings)) as first:
        cookie = sign_in(first)
    # When op-t is reconfigured as an agent's token / Then its dashboard session is over
    demoted = settings.model_copy(update={"api_tokens": "agent:op-t,operator:other-t"})
    with TestClient(create_app(demoted)) as second:
        second.cookies.set(COOKIE, cookie)
        assert second.get("/dashboard", follow_redirects=False).status_code == 303


def test_an_opaque_origin_counts_only_when_the_browser_says_same_origin(
    client: TestClient, settings: Settings
) -> None:
    # Given a signed-in operator, and pages sent with Referrer-Policy: no-referrer, which
    # makes Chromium send "Origin: null" on the dashboard's own form posts
    sign_in(client)
    # When a page of another site posts with an opaque origin / Then it is refused
    for fetch_site in ("cross-site", "same-site", None):
        headers = {"Origin": "null", **({"Sec-Fetch-Site": fetch_site} if fetch_site else {})}
        forged = client.post("/dashboard/logout", headers=headers, follow_redirects=False)
        assert forged.status_code == 403, fetch_site
    assert client.get("/dashboard", follow_redirects=False).status_code == 200
    # And the dashboard's own sign-out button works
    own = {"Origin": "null", "Sec-Fetch-Site": "same-origin"}
    assert client.post("/dashboard/logout", headers=own, follow_redirects=False).status_code == 303
    [(revoked,)] = rows(settings, "SELECT revoked_at FROM dashboard_sessions")
    assert revoked is not None
