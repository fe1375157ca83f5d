"""Reassigning an open case to another tier (issue #11 item 6), on a running service: from the
dashboard's form and from the operators' API. The new tier is paged and its clock runs from
the move; what the old tier still had queued is not sent; the reason is on the timeline."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient
from sqlmodel import Session

from models.settings import Settings
from models.store import as_utc
from models.tables import Delivery, Escalation
from tests.support.rows import add_delivery
from tests.workers.conftest import DESIGN, Harness
from workflows.examples import valid_packet

pytestmark = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
OPERATOR = {"Authorization": "Bearer op-token"}
# Windows long enough that no follow-up or default fires while a test runs.
LONG_CLOCKS = {"low": ("4h", "8h"), "medium": ("1h", "2h"), "high": ("15m", "1h"),
               "critical": ("5m", "30m")}  # fmt: skip


def long_design(folder: Path) -> Path:
    """The test design (its tags and defaults) with long windows."""
    data = yaml.safe_load(DESIGN.read_text(encoding="utf-8"))
    for severity, (window, timeout) in LONG_CLOCKS.items():
        data["severities"][severity].update(window=window, timeout=timeout)
    path = folder / "design-long.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@pytest.fixture
def settings(settings: Settings, tmp_path: Path) -> Settings:
    return settings.model_copy(update={"design": long_design(tmp_path)})


def awaiting_medium_case(service: Harness, packet_id: str) -> str:
    service.send({**valid_packet(), "packet_id": packet_id})  # medium, read_only
    case = service.case("run-8842", packet_id)
    service.in_state(case.id, "awaiting")
    service.sink.wait_for(lambda got: any(r.path == "/ops" for r in got))
    return case.id


def queued_follow_up(service: Harness, case_id: str) -> int:
    """The old tier's follow-up, failed once and waiting for its retry."""
    now = datetime.now(UTC)
    return add_delivery(
        service.engine, escalation_id=case_id, purpose="follow_up", channel="apprise",
        target="tag:ops", title="Follow-up", body="the window passed", state="failed",
        attempts=1, next_attempt_at=now + timedelta(hours=1), created_at=now,
    )  # fmt: skip


def test_an_operator_reassigns_from_the_case_page_and_the_new_tier_is_paged(
    service: Harness, api: TestClient
) -> None:
    # Given an awaiting medium case, and its tier's follow-up queued for a retry
    case_id = awaiting_medium_case(service, "esc-move-1")
    follow_up = queued_follow_up(service, case_id)
    api.post("/dashboard/login", data={"token": "op-token", "name": "Ana"})
    page = api.get(f"/dashboard/cases/{case_id}").text
    assert f'action="/dashboard/cases/{case_id}/reassign"' in page
    assert '<option value="high">' in page and '<option value="medium">' not in page
    # When the operator reassigns it to high, with a reason
    before = datetime.now(UTC)
    moved = api.post(
        f"/dashboard/cases/{case_id}/reassign",
        data={"tier": "high", "reason": "billing data: the on-call owns it"},
    )
    # Then the case page says so, and the timeline has who and why
    assert moved.status_code == 200
    assert "Reassigned: the new tier is paged" in moved.text
    assert "reassigned by dashboard:operator to high: billing data: the on-call owns it" in (
        moved.text
    )
    # And high's primary is paged
    service.sink.wait_for(lambda got: any(r.path == "/oncall" for r in got))
    # And the case runs on high's clock from now: its window, in awaiting
    with Session(service.engine) as session:
        row = session.get(Escalation, case_id)
        assert row is not None and (row.severity, row.state) == ("high", "awaiting")
        due = as_utc(row.next_action_at)
        assert due is not None and before + timedelta(minutes=15) <= due
        assert due <= datetime.now(UTC) + timedelta(minutes=15)
        # And the old tier's queued follow-up is not sent
        old = session.get(Delivery, follow_up)
        assert old is not None and old.state == "cancelled"
    [event] = service.events(case_id, "reassigned")
    assert (event.detail["from"], event.detail["to"], event.detail["timeout_action"]) == (
        "medium",
        "high",
        "retry",
    )
    [cancelled] = service.events(case_id, "delivery_cancelled")
    assert cancelled.detail["why"] == "reassigned to the high tier"


def test_the_api_reassigns_and_refuses_what_cannot_move_naming_why(
    service: Harness, api: TestClient
) -> None:
    case_id = awaiting_medium_case(service, "esc-move-2")
    path = f"/v1/escalations/{case_id}/reassign"
    # A working (read_only) run never goes under a critical tier
    critical = api.post(path, headers=OPERATOR, json={"tier": "critical", "reason": "urgent"})
    assert critical.status_code == 409 and "critical needs a run" in critical.text
    unknown = api.post(path, headers=OPERATOR, json={"tier": "urgent", "reason": "why"})
    assert unknown.status_code == 422 and "tier: one of low" in unknown.text
    blank = api.post(path, headers=OPERATOR, json={"tier": "low", "reason": "  "})
    assert blank.status_code == 422 and "reason" in blank.text
    agent = api.post(
        path, headers={"Authorization": "Bearer agent-token"}, json={"tier": "low", "reason": "x"}
    )
    assert agent.status_code == 403
    assert api.post("/v1/escalations/000000000000/reassign", headers=OPERATOR,
                    json={"tier": "low", "reason": "x"}).status_code == 404  # fmt: skip
    # When an operator moves it down to low
    moved = api.post(path, headers=OPERATOR, json={"tier": "low", "reason": "it can wait"})
    # Then the answer is the case at low, with the reason the run will read
    assert moved.status_code == 200, moved.text
    body = moved.json()
    assert (body["severity"], body["state"]) == ("low", "awaiting")
    [reason] = body["reasons"]
    assert (reason["what"], reason["who"], reason["why"], reason["to"]) == (
        "reassigned",
        "api:operator",
        "it can wait",
        "low",
    )
    service.sink.wait_for(lambda got: any(r.path == "/ops-low" for r in got))
    again = api.post(path, headers=OPERATOR, json={"tier": "low", "reason": "again"})
    assert again.status_code == 409 and "at the low tier already" in again.text
