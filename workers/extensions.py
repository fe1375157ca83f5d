"""Recording an operator's deadline extension on a locked case."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from models.db import transaction
from models.store import add_event, as_utc, lock_escalation
from workers.runtime import Runtime
from workflows.errors import NotFound
from workflows.extensions import extension
from workflows.states import State


def extend_deadline(
    runtime: Runtime, escalation_id: str, *, minutes: int, by: str, reason: str
) -> None:
    """Push the case's deadline; raises NotFound, Conflict (closed, held) or InvalidInput."""
    now = datetime.now(UTC)
    with transaction(runtime.engine) as session:
        row = lock_escalation(session, escalation_id)
        if row is None:
            raise NotFound(f"no escalation {escalation_id}")
        done = extension(
            row.id,
            State(row.state),
            next_action_at=as_utc(row.next_action_at),
            extended=timedelta(seconds=row.extended_seconds or 0),
            minutes=minutes,
            by=by,
            reason=reason,
        )
        row.next_action_at = done.next_action_at
        row.extended_seconds = int(done.extended.total_seconds())
        row.updated_at = now
        session.add(row)
        add_event(session, row, done.event.kind, done.event.detail, now=now)
