"""The typed inputs of `escalate mcp`'s tools: the packet's fields (SPEC §1) and its options.

Every field may be left out here, so a short packet reaches the service's check and comes back
with every §1 problem line, instead of failing the schema on the first missing key.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from workflows.vocabulary import EvidenceKind, Severity, TriggerType, WaitingBehavior


class EvidenceInput(BaseModel):
    kind: EvidenceKind = Field(description="link, artifact, test or log")
    ref: str = Field(description="where it is: a path, URL or log name")


class OptionInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str = Field(description="verb-led, as the person sees it: 'Skip the 3 records'")
    value: str | None = Field(default=None, description="what the run receives (default: label)")
    description: str | None = None
    resumes: bool | None = Field(default=None, description="does choosing it let the run go on")


class PacketInput(BaseModel):
    """An escalation packet (SPEC §1): what the run was doing, what stopped it, what it asks."""

    model_config = ConfigDict(extra="allow")

    packet_id: str | None = Field(default=None, description="the run's own id for this ask")
    run_id: str | None = Field(default=None, description="the run that asks")
    task_summary: str | None = Field(default=None, description="the task, in a sentence")
    severity: Severity | None = None
    trigger_type: TriggerType | None = None
    trigger_detail: str | None = Field(default=None, description="what exactly fired")
    attempted: list[str] | None = Field(default=None, description="what the run tried (1+)")
    evidence: list[EvidenceInput] | None = Field(default=None, description="1+ references")
    completed: list[str] | None = None
    remaining: list[str] | None = None
    blocked_on: str | None = Field(default=None, description="the one thing in the way")
    requested_action: str | None = Field(default=None, description="the question to the person")
    recipient: str | None = Field(default=None, description="who should decide")
    waiting_behavior: WaitingBehavior | None = Field(
        default=None, description="what the run does while it waits (critical: paused/stopped)"
    )
    resume_condition: str | None = Field(default=None, description="what lets the run go on")

    def to_packet(self) -> dict[str, Any]:
        """The packet as the service takes it: fields left out stay out."""
        return self.model_dump(mode="json", exclude_none=True)


def options_body(options: list[str | OptionInput] | None) -> list[Any] | None:
    """Options as the service takes them: a label alone, or label/value/description."""
    if options is None:
        return None
    return [
        option if isinstance(option, str) else option.model_dump(exclude_none=True)
        for option in options
    ]
