"""A parked (dead_letter) case is visible in the stats and goes back to work when retried."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from models.tables import Escalation
from tests.workers.conftest import Harness
from workers.intake import accept
from workers.runtime import runtime_for
from workflows.examples import valid_packet

OPERATOR = {"Authorization": "Bearer op-token"}


def park(service: Harness, packet_id: str) -> tuple[str, dict[str, object]]:
    """A case whose frozen design breaks routing every time; returns its id and good design."""
    accepted = accept(
        runtime_for(service.app), {"packet": {**valid_packet(), "packet_id": packet_id}}
    )
    with Session(service.engine) as session:
        row = session.get(Escalation, accepted.id)
        assert row is not None and row.design is not None
        good_design, row.design = row.design, {"name": "broken"}
        session.add(row)
        session.commit()
    service.in_state(accepted.id, "dead_letter", timeout=30)
    return accepted.id, good_design


def repair(service: Harness, escalation_id: str, design: dict[str, object]) -> None:
    service.change(escalation_id, design=design)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_parked_case_is_retried_after_its_cause_is_fixed(
    service: Harness, api: TestClient
) -> None:
    # Given a case whose frozen design breaks routing every time: it is parked
    parked_id, good_design = park(service, "r-1")
    stats = api.get("/v1/stats", headers=OPERATOR).json()
    assert stats["dead_letter"] == [parked_id] and stats["by_state"]["dead_letter"] == 1
    assert stats["open"] == 0
    # A case that is not parked is not retried
    other = accept(runtime_for(service.app), {"packet": {**valid_packet(), "packet_id": "r-2"}})
    service.in_state(other.id, "awaiting", "followed_up")
    assert api.post(f"/v1/escalations/{other.id}/retry", headers=OPERATOR).status_code == 409
    assert api.post("/v1/escalations/nope/retry", headers=OPERATOR).status_code == 404

    # When the design is repaired and an operator retries
    repair(service, parked_id, good_design)
    retried = api.post(f"/v1/escalations/{parked_id}/retry", headers=OPERATOR)
    assert retried.status_code == 200 and retried.json()["state"] == "snapshotted"

    # Then it is routed and notified like any case, and the stats no longer list it
    service.in_state(parked_id, "awaiting", "followed_up", "decided", "closed")
    service.sink.wait_for(lambda got: any("r-1" in str(r.body) for r in got))
    [event] = service.events(parked_id, "retried")
    assert event.detail == {"into": "snapshotted", "by": "api:operator"}
    assert api.get("/v1/stats", headers=OPERATOR).json()["dead_letter"] == []


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_the_dashboard_shows_a_parked_case_and_retries_it_for_its_own_origin_only(
    service: Harness, api: TestClient
) -> None:
    parked_id, good_design = park(service, "r-dash")
    api.post("/dashboard/login", data={"token": "op-token", "name": "ana"})
    html = api.get("/dashboard").text
    assert "Parked: a stage kept failing (1)" in html
    assert f'action="/dashboard/cases/{parked_id}/retry"' in html
    repair(service, parked_id, good_design)
    forged = api.post(
        f"/dashboard/cases/{parked_id}/retry",
        headers={"Origin": "https://evil.example"},
        follow_redirects=False,
    )
    assert forged.status_code == 403
    assert service.in_state(parked_id, "dead_letter").state == "dead_letter"
    done = api.post(f"/dashboard/cases/{parked_id}/retry", follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == f"/dashboard/cases/{parked_id}"
    service.in_state(parked_id, "awaiting", "followed_up", "decided", "closed")
    [event] = service.events(parked_id, "retried")
    assert event.detail["by"] == "dashboard:operator"
    again = api.post(f"/dashboard/cases/{parked_id}/retry")
    assert again.status_code == 409 and "only dead_letter is retried" in again.text
