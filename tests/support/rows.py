"""Rows a test puts straight into the store, as a stage would have left them."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Engine

from models.db import transaction
from models.tables import Delivery


def add_delivery(engine: Engine, **fields: Any) -> int:
    """An outbox row with these fields; returns its id."""
    with transaction(engine) as session:
        row = Delivery(**fields)
        session.add(row)
        session.flush()
        assert row.id is not None
        return row.id
