"""Rows a test puts straight into the store, as a stage would have left them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy.engine import Engine

from models.db import make_engine, transaction
from models.settings import Settings
from models.tables import Delivery, Escalation


def add_delivery(engine: Engine, **fields: Any) -> int:
    """An outbox row with these fields; returns its id."""
    with transaction(engine) as session:
        row = Delivery(**fields)
        session.add(row)
        session.flush()
        assert row.id is not None
        return row.id


def mark_awaiting(settings: Settings, escalation_id: str) -> None:
    """Move a raised case to `awaiting` in SQL, as the route stage would leave it."""
    engine = make_engine(settings)
    with transaction(engine) as session:
        row = session.get(Escalation, escalation_id)
        assert row is not None
        row.state, row.routed_at = "awaiting", datetime.now(UTC)
        session.add(row)
    engine.dispose()
