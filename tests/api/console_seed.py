"""Cases for the console's tests, made fast: one raised through the API, the rest copies."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, cast

from fastapi.testclient import TestClient
from sqlalchemy import Engine
from sqlmodel import Session

from models.store import new_id
from models.tables import Escalation
from workers.runtime import Runtime
from workflows.examples import valid_packet
from workflows.states import State

AGENT = {"Authorization": "Bearer agent-t"}
SEVERITIES = ("critical", "high", "medium", "low")
LONG = "x" * 80  # an unbroken token as wide as a phone is not


def engine_of(client: TestClient) -> Engine:
    return cast(Runtime, client.app.state.runtime).engine  # type: ignore[attr-defined]


def raise_case(client: TestClient, **changes: Any) -> str:
    packet = {**valid_packet(), **changes}
    packet.setdefault("blocked_on", "")
    packet["blocked_on"] += f" ({packet['packet_id']})"  # a repeat would join the open case
    response = client.post("/v1/escalations", headers=AGENT, json={"packet": packet})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def route(
    client: TestClient, escalation_id: str, *, ago: timedelta = timedelta(), **fields: Any
) -> None:
    """The case as routing leaves it (no worker runs here): awaiting since `ago`."""
    with Session(engine_of(client)) as session:
        row = session.get(Escalation, escalation_id)
        assert row is not None
        row.state, row.routed_at = State.AWAITING, datetime.now(UTC) - ago
        for name, value in fields.items():
            setattr(row, name, value)
        session.add(row)
        session.commit()


def copies(client: TestClient, template_id: str, count: int, *, long: bool = False) -> list[str]:
    """`count` awaiting copies of a raised case: severities in turn, deadlines spread out."""
    made = []
    with Session(engine_of(client)) as session:
        template = session.get(Escalation, template_id)
        assert template is not None
        base = template.model_dump()
        now = datetime.now(UTC)
        for i in range(count):
            run = f"run-{i:04d}" + (f"-{LONG}" if long else "")
            question = f"Case {i}: skip the {i} orphan records?" + (f" {LONG}" if long else "")
            severity = SEVERITIES[i % 4]
            row = Escalation.model_validate(
                {
                    **base,
                    "id": new_id(),
                    "run_id": run,
                    "packet_id": f"p-{i}",
                    "severity": severity,
                    "packet": {
                        **(template.packet or {}),
                        "run_id": run,
                        "severity": severity,
                        "requested_action": question,
                    },
                    "reply_token_hash": None,
                    "question_key": None,
                    "state": State.AWAITING,
                    "routed_at": now - timedelta(seconds=7 * i),
                    "created_at": now - timedelta(seconds=7 * i),
                }
            )
            session.add(row)
            made.append(row.id)
        session.commit()
    return made
