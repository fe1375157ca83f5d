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
    assert (decision.decided_by, decision.channel) == ("dashboard:operator/Ana Lima", "dashboard")
    again = api.post(approve)
    assert "Not decided: the case had been decided already." in again.text
    assert "Decided: approve by dashboard:operator/Ana Lima at " in again.text
    closed = api.get("/dashboard").text
    assert "Recently closed" in closed and "/answer?" not in closed.split("Recently closed")[1]
