"""Sending a dead-lettered case back to work once a person has fixed what kept failing."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlmodel import col, select

from models.db import transaction
from models.store import apply_result, case_of, lock_escalation
from models.tables import Event
from workers.runtime import Runtime
from workers.stage_runs import nudge
from workers.tasks import STAGE_OF_STATE
from workflows.errors import Conflict, NotFound
from workflows.stages import retry_dead_letter
from workflows.states import State


def retry(runtime: Runtime, escalation_id: str, *, by: str) -> State:
    """Put the case back where it stuck, attempts reset, and drive that stage now."""
    now = datetime.now(UTC)
    with transaction(runtime.engine) as session:
        row = lock_escalation(session, escalation_id)
        if row is None:
            raise NotFound(f"no escalation {escalation_id}")
        if row.state != State.DEAD_LETTER.value:
            raise Conflict(
                f"escalation {escalation_id} is {row.state}: only dead_letter is retried"
            )
        parked = session.exec(
            select(Event)
            .where(Event.escalation_id == row.id, Event.kind == "dead_lettered")
            .order_by(col(Event.id).desc())
        ).first()
        if parked is None or "stuck_in" not in parked.detail:
            raise Conflict(f"escalation {escalation_id} has no record of where it stuck")
        stuck_in = State(parked.detail["stuck_in"])
        result = retry_dead_letter(case_of(row), stuck_in, by=by, now=now)
        apply_result(session, row, result, now=now)
    nudge(runtime.app, STAGE_OF_STATE[stuck_in], escalation_id)
    return stuck_in
