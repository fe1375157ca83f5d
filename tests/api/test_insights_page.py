"""The insights page says which decisions its figures cover."""

from __future__ import annotations

from datetime import timedelta

from fastapi.testclient import TestClient

from tests.api.console_seed import raise_case, route
from tests.api.test_console import console  # noqa: F401


def test_the_insights_page_says_what_it_covers(console: TestClient) -> None:  # noqa: F811
    # Given no decision yet / Then the page says so
    assert "No case has been decided yet." in console.get("/dashboard/insights").text
    # Given one case a person decided
    decided = raise_case(console, severity="high", packet_id="w1")
    route(console, decided, ago=timedelta(minutes=3))
    console.post(f"/dashboard/cases/{decided}/answer?option=approve")
    # When the operator opens the insights page
    page = console.get("/dashboard/insights").text
    # Then it covers every decision so far, and says since when
    assert '<p class="note" id="covered">Every decision so far: 1, since 20' in page
