"""The intake request as a typed model for the API; its packet is the checks' own schema.

The packet's schema lives in workflows/packet_schema.py and is the one the checks validate
with (SPEC §1): the API documents that same schema here, with recipient and
waiting_behavior left to the design as intake allows.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field, GetPydanticSchema

from workflows.packet_schema import packet_schema

# A packet as intake takes it (one recipient, one requested decision): validated by the
# schema the checks run, so the documented shape and the refusals cannot drift apart.
Packet = Annotated[
    dict[str, Any], GetPydanticSchema(lambda _type, _handler: packet_schema(design_filled=True))
]


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
