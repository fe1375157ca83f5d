"""Keeping the service honest: counts a monitor can alert on, and retrying a parked case."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends
from sqlalchemy import func
from sqlmodel import Session, col, select

from api.auth import require
from models.store import iso
from models.tables import Delivery, Escalation
from workers.recovery import retry
from workers.runtime import Runtime
from workers.wake_acks import not_resumed_ids
from workflows.states import TERMINAL, State

PARKED_LISTED = 20


def admin_router(runtime: Runtime) -> APIRouter:
    router = APIRouter()

    @router.get("/v1/stats")
    def stats(_role: Annotated[str, Depends(require("agent", "operator"))]) -> dict[str, Any]:
        """Cases by state, the oldest open one, parked cases, deliveries by state, and cases
        decided but not resumed (their run never acknowledged the wake)."""
        terminal = [state.value for state in TERMINAL]
        with Session(runtime.engine) as db:
            by_state = dict(
                db.exec(select(Escalation.state, func.count()).group_by(Escalation.state)).all()
            )
            oldest = db.exec(
                select(func.min(Escalation.created_at)).where(
                    col(Escalation.state).not_in(terminal)
                )
            ).one()
            parked = db.exec(
                select(Escalation.id)
                .where(Escalation.state == State.DEAD_LETTER.value)
                .order_by(col(Escalation.updated_at).desc())
                .limit(PARKED_LISTED)
            ).all()
            deliveries = dict(
                db.exec(select(Delivery.state, func.count()).group_by(Delivery.state)).all()
            )
            not_resumed = not_resumed_ids(db, limit=PARKED_LISTED)
        return {
            "open": sum(n for state, n in by_state.items() if state not in terminal),
            "by_state": by_state,
            "oldest_open_at": iso(oldest),
            "dead_letter": list(parked),
            "deliveries": deliveries,
            # Decided, woken, and never acknowledged after every redelivery.
            "decided_not_resumed": list(not_resumed),
        }

    @router.post("/v1/escalations/{escalation_id}/retry")
    def retry_parked(
        escalation_id: str, role: Annotated[str, Depends(require("operator"))]
    ) -> dict[str, Any]:
        """A dead-lettered case goes back to the stage it failed in, attempts reset."""
        into = retry(runtime, escalation_id, by=f"api:{role}")
        return {"id": escalation_id, "state": into.value, "retried": True}

    return router
