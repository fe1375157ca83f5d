"""Pipelines (SPEC §6): raise from a state folder, and read a phase's reset counters."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response, status
from pydantic import BaseModel, ConfigDict, Field

from api.auth import require
from api.views import answer_accepted
from workers.pipelines import SUMMARY_FILE, phase_counters, raise_pipeline
from workers.runtime import Runtime
from workflows.vocabulary import Severity


class PipelineEscalationRequest(BaseModel):
    """Where the pipeline's state files are, and how to reach its orchestrator afterwards."""

    model_config = ConfigDict(extra="forbid")

    state_dir: str = Field(
        description="Absolute path of the folder holding phase_state.json (required) and the "
        f"optional state files; {SUMMARY_FILE} is written there before anyone is notified."
    )
    pipeline_id: str | None = Field(
        None,
        description="Names the pipeline for its counters; default: phase_state.json "
        "pipeline_id, else the state folder's path.",
    )
    severity: Severity = Severity.HIGH
    recipient: str | None = Field(None, description="Who decides; default 'pipeline operator'.")
    command_file: str | None = Field(
        None, description="Absolute path where the chosen command is written as JSON on close."
    )
    wake: dict[str, str] | None = Field(None, description="Other wake-ups: {task, webhook}.")


def pipeline_router(runtime: Runtime, *, public_url: str) -> APIRouter:
    router = APIRouter()

    @router.post("/v1/pipelines/escalations", status_code=status.HTTP_201_CREATED)
    def raise_from_state(
        body: PipelineEscalationRequest,
        response: Response,
        _role: Annotated[str, Depends(require("agent"))],
    ) -> dict[str, Any]:
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
        accepted = raised.accepted
        result = answer_accepted(runtime, accepted, response, public_url=public_url)
        return {**result, **raised.pipeline}

    @router.get("/v1/pipelines/counters")
    def counters(
        pipeline_id: Annotated[str, Query(min_length=1)],
        phase: Annotated[str, Query(min_length=1)],
        _role: Annotated[str, Depends(require("agent", "operator"))],
    ) -> dict[str, Any]:
        """Resets the service has counted for one phase, and what it would offer now."""
        return phase_counters(runtime, pipeline_id, phase)

    return router
