"""Recording an operator's acknowledgement on a locked case."""

from __future__ import annotations

from datetime import UTC, datetime

from models.db import transaction
from models.store import add_event, lock_escalation
from workers.runtime import Runtime
from workflows.acknowledgements import acknowledgement
from workflows.errors import NotFound
from workflows.states import State


def acknowledge(runtime: Runtime, escalation_id: str, *, by: str, reason: str) -> None:
    """Append an `acknowledged` event; raises NotFound, Conflict (closed) or InvalidInput."""
    now = datetime.now(UTC)
    with transaction(runtime.engine) as session:
        row = lock_escalation(session, escalation_id)
        if row is None:
            raise NotFound(f"no escalation {escalation_id}")
        event = acknowledgement(row.id, State(row.state), by=by, reason=reason)
        add_event(session, row, event.kind, event.detail, now=now)
        row.updated_at = now
        session.add(row)
