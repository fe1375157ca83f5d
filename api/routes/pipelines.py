"""Pipelines (SPEC §6): raise from a state folder, and read a phase's reset counters."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from api.deps import CurrentAgent, CurrentRole, RuntimeDep
from api.schemas import PhaseCounters, PipelineAccepted, PipelineEscalationCreate
from api.views import answer_accepted
from workers.pipelines import phase_counters, raise_pipeline
from workflows.limits import PATH_LIMIT

router = APIRouter()
Key = Annotated[str, Query(min_length=1, max_length=PATH_LIMIT)]


@router.post(
    "/v1/pipelines/escalations",
    status_code=status.HTTP_201_CREATED,
    responses={200: {"model": PipelineAccepted, "description": "a resend, or a join"}},
)
def raise_from_state(
    body: PipelineEscalationCreate, runtime: RuntimeDep, response: Response, _role: CurrentAgent
) -> PipelineAccepted:
    """Read the state files once, write the advisory, offer what the caps allow."""
    raised = raise_pipeline(
        runtime,
        state_dir=Path(body.state_dir),
        pipeline_id=body.pipeline_id,
        severity=body.severity.value,
        recipient=body.recipient,
        command_file=body.command_file,
        wake=body.wake,
    )
    public_url = runtime.settings.resolved_public_url
    accepted = answer_accepted(runtime, raised.accepted, response, public_url=public_url)
    shown = {k: v for k, v in raised.pipeline.items() if k != "reply_token"}  # a key: not echoed
    return PipelineAccepted.model_validate({**accepted.model_dump(), **shown})


@router.get("/v1/pipelines/counters")
def counters(
    pipeline_id: Key, phase: Key, runtime: RuntimeDep, _role: CurrentRole
) -> PhaseCounters:
    """Resets the service has counted for one phase, and what it would offer now."""
    return PhaseCounters.model_validate(phase_counters(runtime, pipeline_id, phase))
