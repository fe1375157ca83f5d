"""The same open question from the same run joins the open case (SPEC §9: never twice)."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text

from models.settings import Settings
from workflows.examples import valid_packet

AGENT = {"Authorization": "Bearer agent-t"}


def raise_(client: TestClient, **changes: Any) -> dict[str, Any]:
    response = client.post(
        "/v1/escalations", headers=AGENT, json={"packet": {**valid_packet(), **changes}}
    )
    assert response.status_code in (200, 201), response.json()
    body: dict[str, Any] = response.json()
    return body


def test_a_repeat_of_the_open_question_joins_it_and_says_so(api_client: TestClient) -> None:
    first = raise_(api_client, packet_id="esc-a")
    # Same run, same trigger, same blocked_on up to case, spacing and final punctuation
    blocked_on = valid_packet()["blocked_on"].upper().replace(" ", "  ").rstrip(".") + "!"
    again = raise_(api_client, packet_id="esc-b", blocked_on=blocked_on)
    assert again["id"] == first["id"] and again["joined"] is True and not again["created"]
    assert "nobody is paged again" in again["note"]
    events = api_client.get(f"/v1/escalations/{first['id']}/events", headers=AGENT).json()
    assert [e["detail"] for e in events["events"] if e["kind"] == "joined"] == [
        {"packet_id": "esc-b"}
    ]


def test_a_different_question_run_or_severity_is_a_new_case(api_client: TestClient) -> None:
    first = raise_(api_client, packet_id="esc-a")
    others = [
        raise_(api_client, packet_id="esc-b", blocked_on="Another point entirely."),
        raise_(api_client, packet_id="esc-c", run_id="run-9999"),
        raise_(api_client, packet_id="esc-d", trigger_type="blocked"),
        raise_(api_client, packet_id="esc-e", severity="high", waiting_behavior="paused"),
    ]
    assert all(o["created"] and o["id"] != first["id"] for o in others)


def test_once_the_case_is_closed_the_question_may_be_asked_again(
    api_client: TestClient, api_settings: Settings
) -> None:
    first = raise_(api_client, packet_id="esc-a")
    engine = create_engine(api_settings.resolved_database_url)
    with engine.begin() as db:
        db.execute(text("UPDATE escalations SET state='closed' WHERE id=:id"), {"id": first["id"]})
    engine.dispose()
    again = raise_(api_client, packet_id="esc-b")
    assert again["created"] and again["id"] != first["id"]


def test_a_packet_refused_then_resent_fixed_under_its_id_is_accepted(
    api_client: TestClient, api_settings: Settings
) -> None:
    import pytest

    from workers.app import make_celery
    from workers.intake import accept
    from workers.runtime import runtime_for
    from workflows.errors import PacketRefused

    runtime = runtime_for(make_celery(api_settings))
    broken = {**valid_packet(), "packet_id": "esc-fix", "evidence": []}
    with pytest.raises(PacketRefused):
        accept(runtime, {"packet": broken}, record_refusal=True)  # as the Celery intake does
    fixed = accept(runtime, {"packet": {**valid_packet(), "packet_id": "esc-fix"}})
    assert fixed.created and fixed.state == "received"
    events = api_client.get(f"/v1/escalations/{fixed.id}/events", headers=AGENT).json()
    assert [e["kind"] for e in events["events"]] == ["refused", "accepted"]
    runtime.engine.dispose()
