"""Cases the security tests open: raised over HTTP, moved to awaiting with a reply code."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi.testclient import TestClient

from models.db import make_engine, transaction
from models.settings import Settings
from models.tables import Escalation
from workers.answering import reply_token, token_hash
from workers.app import make_celery
from workers.runtime import runtime_for
from workflows.examples import valid_packet

AGENT = {"Authorization": "Bearer agent-t"}


def open_case(client: TestClient, settings: Settings) -> tuple[str, str]:
    """A raised case moved to `awaiting` with its reply code set: (id, code)."""
    response = client.post("/v1/escalations", headers=AGENT, json={"packet": valid_packet()})
    assert response.status_code == 201, response.text
    escalation_id = str(response.json()["id"])
    key = runtime_for(make_celery(settings)).answer_key
    code = reply_token(key, escalation_id)
    engine = make_engine(settings)
    with transaction(engine) as session:
        row = session.get(Escalation, escalation_id)
        assert row is not None
        row.state, row.routed_at = "awaiting", datetime.now(UTC)  # type: ignore[assignment]
        row.reply_token_hash = token_hash(key, code)
        session.add(row)
    engine.dispose()
    return escalation_id, code
