"""An operator's handling of an open case, by API: acknowledge, extend, reassign (issue #11).

Each is recorded with who and why on the timeline and returned to the run with its decision
(`reasons`); the dashboard's forms do the same through the same workers.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool

from api.deps import OperatorHolder, RuntimeDep
from api.routes.escalations import read_detail
from api.schemas import AcknowledgeCreate, EscalationPublic, ExtendCreate, ReassignCreate
from workers.acknowledgements import acknowledge
from workers.extensions import extend_deadline
from workers.reassignment import reassign

router = APIRouter()


@router.post("/v1/escalations/{escalation_id}/acknowledge")
def acknowledge_case(
    escalation_id: str, body: AcknowledgeCreate, runtime: RuntimeDep, holder: OperatorHolder
) -> EscalationPublic:
    """ "I have it": who and why on the timeline; nothing is decided."""
    acknowledge(runtime, escalation_id, by=f"api:{holder.identity}", reason=body.reason)
    return read_detail(runtime, escalation_id)


@router.post("/v1/escalations/{escalation_id}/extend")
def extend_case(
    escalation_id: str, body: ExtendCreate, runtime: RuntimeDep, holder: OperatorHolder
) -> EscalationPublic:
    """More time before the default: minutes added to the deadline, with who and why."""
    extend_deadline(
        runtime, escalation_id, minutes=body.minutes, by=f"api:{holder.identity}",
        reason=body.reason,
    )  # fmt: skip
    return read_detail(runtime, escalation_id)


@router.post("/v1/escalations/{escalation_id}/reassign")
async def reassign_case(
    escalation_id: str, body: ReassignCreate, runtime: RuntimeDep, holder: OperatorHolder
) -> EscalationPublic:
    """To another severity tier: its recipient is paged and its window, timeout and default
    apply from now; the old tier's queued follow-up and next-tier pages are not sent."""
    await run_in_threadpool(
        reassign, runtime, escalation_id, to=body.tier, by=f"api:{holder.identity}",
        reason=body.reason,
    )  # fmt: skip
    return await run_in_threadpool(read_detail, runtime, escalation_id)
