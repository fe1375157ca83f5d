"""Answering from the dashboard against a running service: the first answer wins, once."""

from __future__ import annotations

import re
from html import unescape

import pytest
from fastapi.testclient import TestClient

from tests.workers.conftest import Harness
from workflows.examples import valid_packet


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_an_operator_decides_from_the_dashboard(service: Harness, api: TestClient) -> None:
    service.send({**valid_packet(), "packet_id": "dash-1", "severity": "critical",
                  "waiting_behavior": "paused"})  # fmt: skip
    case = service.case("run-8842", "dash-1")
    service.in_state(case.id, "awaiting", "followed_up")
    api.post("/dashboard/login", data={"token": "op-token", "name": "Ana  Lima\n"})
    html = api.get("/dashboard").text
    assert "Arrange the 3 orphan records" not in html and "critical" in html
    pattern = (
        r'<a(?: class="destructive")? href="(/dashboard/cases/[0-9a-f]+/answer\?option=[^"]+)">'
    )
    pattern += r"([^<]+)</a>"
    links = {unescape(href): label for href, label in re.findall(pattern, html)}
    approve = next(href for href, label in links.items() if label == "approve")

    decided = api.post(approve)  # POST-redirect-GET: the case page says what happened
    assert decided.status_code == 200 and "Decided. The run is being told." in decided.text
    service.in_state(case.id, "closed")
    [decision] = service.decisions(case.id)
    assert (decision.decided_by, decision.channel) == (
        "dashboard:operator",
        "dashboard",
    )  # Ana Lima: a note
    again = api.post(approve)
    assert "Not decided: the case had been decided already." in again.text
    assert "Decided: approve by dashboard:operator at " in again.text
    closed = api.get("/dashboard").text
    assert "Recently closed" in closed and "/answer?" not in closed.split("Recently closed")[1]


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_stopping_a_critical_case_from_the_dashboard_takes_a_second_confirmation(
    service: Harness, api: TestClient
) -> None:
    # Given a critical case: its `deny` stops the run, so it is destructive
    service.send({**valid_packet(), "packet_id": "dash-deny", "severity": "critical",
                  "waiting_behavior": "paused"})  # fmt: skip
    case = service.case("run-8842", "dash-deny")
    service.in_state(case.id, "awaiting", "followed_up")
    api.post("/dashboard/login", data={"token": "op-token", "name": "Ana"})
    deny = f"/dashboard/cases/{case.id}/answer?option=deny"
    # When the operator opens and presses it
    assert "cannot be undone" in api.get(deny).text
    first = api.post(deny)
    # Then a second page states the consequence and nothing is decided yet
    assert first.status_code == 200 and "This cannot be undone" in first.text
    assert service.decisions(case.id) == []
    second = api.post(deny, data={"confirm": "deny"})  # the explicit tick
    assert second.status_code == 200 and "Decided: deny by dashboard:operator" in second.text
    assert service.decisions(case.id)[0].option == "deny"
