"""The escalation packet (SPEC §1) and the intake request, as typed models for the API.

The rules live in workflows/packet_checks.py, whose fixed error texts scripts depend on;
these models describe the shape (OpenAPI, clients) and type an already-checked packet.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from workflows.vocabulary import EvidenceKind, Severity, TriggerType, WaitingBehavior


class Evidence(BaseModel):
    """A reference the figures in trigger_detail come from."""

    model_config = ConfigDict(frozen=True)

    kind: EvidenceKind
    ref: str = Field(min_length=1, description="a link, artifact path, test id or log path")


class Packet(BaseModel):
    """One escalation: one recipient, one requested decision (SPEC §1)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    packet_id: str = Field(min_length=1, description="stable id, unique within the run")
    run_id: str = Field(min_length=1)
    task_summary: str = Field(min_length=1, description="the task and its goal")
    severity: Severity
    trigger_type: TriggerType
    trigger_detail: str = Field(min_length=1, description="the concrete facts that fired it")
    attempted: list[str] = Field(min_length=1, description="what was tried, in order")
    evidence: list[Evidence] = Field(min_length=1)
    completed: list[str] = Field(description="parts done and verified")
    remaining: list[str] = Field(description="parts still to do, the blocked part included")
    blocked_on: str = Field(min_length=1, description="the single point the run is stopped on")
    requested_action: str = Field(min_length=1, description="the decision needed, one line")
    # Left out (or null), both are filled from the design's tier for the severity at intake.
    recipient: str | None = Field(
        default=None, min_length=1, description="who decides; default: the tier's primary"
    )
    waiting_behavior: WaitingBehavior | None = Field(
        default=None, description="how the run waits; default: the tier's"
    )
    resume_condition: str = Field(min_length=1, description="an observable event")


class OptionIn(BaseModel):
    """An answer the operator may give; `resumes` is false for stop-like values."""

    label: str
    value: str | None = None
    description: str = ""
    resumes: bool | None = None
    destructive: bool = Field(default=False, description="answering it needs CONFIRM <label>")


class WakeIn(BaseModel):
    """How the run wants to learn the decision."""

    task: str | None = Field(default=None, description="Celery task sent wake={...} by name")
    queue: str | None = Field(
        default=None,
        description="the queue your worker consumes, where the task is sent (default: "
        "Celery's default queue, celery); never the service's own",
    )
    webhook: str | None = Field(default=None, description="URL POSTed the signed decision")
    fallback_file: str | None = Field(
        default=None, description="BLOCKED.md written if no channel confirms delivery"
    )


class EscalationRequest(BaseModel):
    """What `POST /v1/escalations` and the `escalation.escalate` task take."""

    packet: Packet
    snapshot: dict[str, Any] | None = Field(
        default=None,
        description='{"verified", "proof", "checked_at", "fingerprint": {"kind": '
        'git|file|http|none, "path"|"url"}, "scheduled_task_ids": [...]}',
    )
    options: list[OptionIn | str] | None = None
    wake: WakeIn | None = None
    owner: str | None = Field(
        default=None,
        description="the run's owner as a reply identity (e.g. slack:U123); the design may "
        "forbid them approving their own harm_risk cases",
    )
