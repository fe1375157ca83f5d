"""A parked (dead_letter) case is visible in the stats and goes back to work when retried."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from api.app import create_app
from models.tables import Escalation
from tests.workers.conftest import Harness
from workers.intake import accept
from workers.runtime import runtime_for
from workflows.examples import valid_packet

OPERATOR = {"Authorization": "Bearer op-token"}


@pytest.fixture
def api(service: Harness) -> Iterator[TestClient]:
    settings = service.settings.model_copy(update={"api_tokens": "operator:op-token"})
    with TestClient(create_app(settings)) as client:
        yield client


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_parked_case_is_retried_after_its_cause_is_fixed(
    service: Harness, api: TestClient
) -> None:
    # Given a case whose frozen design breaks routing every time: it is parked
    accepted = accept(runtime_for(service.app), {"packet": {**valid_packet(), "packet_id": "r-1"}})
    with Session(service.engine) as session:
        row = session.get(Escalation, accepted.id)
        assert row is not None and row.design is not None
        good_design, row.design = row.design, {"name": "broken"}
        session.add(row)
        session.commit()
    service.in_state(accepted.id, "dead_letter", timeout=30)
    stats = api.get("/v1/stats", headers=OPERATOR).json()
    assert stats["dead_letter"] == [accepted.id] and stats["by_state"]["dead_letter"] == 1
    assert stats["open"] == 0
    # A case that is not parked is not retried
    other = accept(runtime_for(service.app), {"packet": {**valid_packet(), "packet_id": "r-2"}})
    service.in_state(other.id, "awaiting", "followed_up")
    assert api.post(f"/v1/escalations/{other.id}/retry", headers=OPERATOR).status_code == 409
    assert api.post("/v1/escalations/nope/retry", headers=OPERATOR).status_code == 404

    # When the design is repaired and an operator retries
    with Session(service.engine) as session:
        row = session.get(Escalation, accepted.id)
        assert row is not None
        row.design = good_design
        session.add(row)
        session.commit()
    retried = api.post(f"/v1/escalations/{accepted.id}/retry", headers=OPERATOR)
    assert retried.status_code == 200 and retried.json()["state"] == "snapshotted"

    # Then it is routed and notified like any case, and the stats no longer list it
    service.in_state(accepted.id, "awaiting", "followed_up", "decided", "closed")
    service.sink.wait_for(lambda got: any("r-1" in str(r.body) for r in got))
    [event] = service.events(accepted.id, "retried")
    assert event.detail == {"into": "snapshotted", "by": "api:operator"}
    assert api.get("/v1/stats", headers=OPERATOR).json()["dead_letter"] == []
