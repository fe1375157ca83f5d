"""What the HTTP API takes and answers, as typed models (Create: a body in; Public: a body out).

The escalation request itself stays a plain object checked by our own rules (fixed error
texts, SPEC §1); models/packet.py documents it. Times are ISO 8601 strings in UTC, as
models.store.iso writes them.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from workflows.judgement import ReplyOutcome
from workflows.limits import (
    CHANNEL_LIMIT,
    ID_LIMIT,
    IDS_LIMIT,
    LABEL_LIMIT,
    PATH_LIMIT,
    REPLY_LIMIT,
    SENDER_LIMIT,
    URL_LIMIT,
)
from workflows.stage_results import Resolution
from workflows.vocabulary import Severity

Text = Annotated[str, Field(max_length=URL_LIMIT)]


def _absent_when_none(value: object) -> bool:
    return value is None


# --- escalations ------------------------------------------------------------------------------


class EscalationAccepted(BaseModel):
    """A raise's answer: 201 for a new case, 200 for a resend or a join."""

    id: str
    state: str
    created: bool
    joined: bool
    note: str | None = Field(
        default=None,
        exclude_if=_absent_when_none,
        description="present when the same open question was joined: nobody is paged again",
    )
    warnings: list[str]
    url: str


class EscalationSummary(BaseModel):
    """One line of the case list."""

    id: str
    run_id: str
    packet_id: str
    severity: str
    trigger_type: str
    state: str
    outcome: Resolution | None = Field(
        description="decided, defaulted, reconcile_first, refused, parked or cancelled; "
        "null while open (README: what the run sees)"
    )
    question: str | None = Field(description="the packet's requested_action")
    created_at: str | None
    next_action_at: str | None
    closed_at: str | None


class DecisionPublic(BaseModel):
    """The one decision of a case: a human's, or the timeout default."""

    option: str
    value: str
    resumes: bool
    decided_by: str
    channel: str
    is_default: bool
    at: str | None


class DeliveryPublic(BaseModel):
    """One outbox row: a notification, follow-up or wake-up, and how its sending went."""

    id: int | None
    purpose: str
    channel: str = Field(description="the apprise tag, task name or webhook URL")
    role: str
    state: str
    attempts: int
    last_error: str | None
    sent_at: str | None
    step: int = Field(default=0, description="a chain's page number; 0 for a one-off page")
    due_at: str | None = Field(
        default=None, description="when a waiting page (chain level, working hours) goes out"
    )


class ResumedPublic(BaseModel):
    """Whether the run took its decision: acknowledged, or the file it reads written."""

    at: str | None
    via: str | None = Field(description="ack, blocked_file_removed or command_file_written")
    redeliveries: int = Field(description="times the wake was sent again, unacknowledged")
    ack_due_at: str | None = Field(description="when it is sent again; null once given up")


class EscalationPublic(EscalationSummary):
    """A case in full: its packet, snapshot, options, decision and deliveries."""

    packet: dict[str, Any] | None
    snapshot: dict[str, Any] | None
    options: list[dict[str, Any]]
    wake: dict[str, Any]
    problems: list[str]
    cites_id: str | None
    design_hash: str | None
    routed_at: str | None
    followed_up_at: str | None
    decided_at: str | None
    resumed: ResumedPublic
    acknowledged_by: str | None = Field(
        default=None, description="who said they are on it; reminders stopped, nothing decided"
    )
    acknowledged_at: str | None = None
    decision: DecisionPublic | None
    reasons: list[dict[str, Any]] = Field(
        default_factory=list,
        description="what operators said while handling it: {what, who, when, why}, oldest first",
    )
    pipeline: dict[str, Any] | None = Field(
        description="a pipeline case's offer and, once decided, the command to run"
    )
    deliveries: list[DeliveryPublic]


class EscalationWait(EscalationPublic):
    """A long-poll's answer: the case, and whether it is still waiting."""

    waiting: bool


class EventPublic(BaseModel):
    id: int | None
    at: str | None
    kind: str
    state: str
    detail: dict[str, Any]


class ReplyPublic(BaseModel):
    id: int | None
    at: str | None
    channel: str
    sender: str
    text: str
    option: str | None
    matched_by: str | None
    outcome: str


class CaseHistory(BaseModel):
    """A case's events (the audit log) and every reply as it arrived."""

    id: str
    events: list[EventPublic]
    replies: list[ReplyPublic]


class AcknowledgeCreate(BaseModel):
    """An operator takes the case: why (e.g. 'looking at the totals now')."""

    reason: str = Field(max_length=REPLY_LIMIT)


class ExtendCreate(BaseModel):
    """Minutes added to the case's deadline, and why."""

    minutes: int = Field(ge=1, le=1440)
    reason: str = Field(max_length=REPLY_LIMIT)


class ReassignCreate(BaseModel):
    """The severity tier the case moves to, and why."""

    tier: str = Field(max_length=16, description="low, medium, high or critical")
    reason: str = Field(max_length=REPLY_LIMIT)


class ReplyCreate(BaseModel):
    """An operator's answer: an option by label, or free text the reply grammar reads."""

    option: str | None = Field(default=None, max_length=LABEL_LIMIT)
    text: str | None = Field(default=None, max_length=REPLY_LIMIT)
    sender: str | None = Field(
        default=None,
        max_length=SENDER_LIMIT,
        description="a name recorded as a note; the answer is from the token's holder",
    )


class AnswerPublic(BaseModel):
    """What became of a reply."""

    id: str
    outcome: ReplyOutcome
    message: str
    option: str | None
    decision: DecisionPublic | None


class Retried(BaseModel):
    id: str
    state: str
    retried: bool


class Stats(BaseModel):
    """Counts a monitor can alert on."""

    open: int
    by_state: dict[str, int]
    oldest_open_at: str | None
    dead_letter: list[str] = Field(description="parked cases, newest first")
    deliveries: dict[str, int]
    decided_not_resumed: list[str] = Field(
        description="closed cases whose run never acknowledged the wake, after every redelivery"
    )


class WakeAcknowledged(BaseModel):
    """The run's acknowledgement, recorded once."""

    wake_id: str
    resumed_at: str | None
    first: bool = Field(description="false when the wake had been acknowledged already")


class Health(BaseModel):
    """`ok` with the design in force; `unavailable` (503) names what is down."""

    status: str
    design: str
    design_version: int
    down: dict[str, str] | None = Field(default=None, exclude_if=_absent_when_none)


# --- blockers ---------------------------------------------------------------------------------

EscalationId = Annotated[str, Field(max_length=ID_LIMIT)]


class BlockersCreate(BaseModel):
    """The escalations a task waits on, and how to wake it once the last is resolved."""

    escalations: list[EscalationId] = Field(default_factory=list, max_length=IDS_LIMIT)
    wake: dict[str, Text] = Field(
        default_factory=dict, description="{task: NAME, queue: QUEUE} and/or {webhook: URL}"
    )


class BlockerCard(BaseModel):
    """'Decision needed: <question>' and how it stands."""

    escalation_id: str
    title: str
    state: str
    resolved: bool
    decision: dict[str, Any] | None
    outcome: str | None


class TaskBlockers(BaseModel):
    """The task's open set after the call, in the order blockers were added."""

    task: str
    blockers: list[BlockerCard]
    added: list[str] = Field(description="new to the set")
    already_woken: list[str] = Field(description="not added: their decisions already woke the task")
    created: bool = Field(description="the call started the task's set")


class TaskWaitPublic(BaseModel):
    blockers: list[BlockerCard]
    woken_at: str | None
    wake_id: str = Field(description="what the woken task acknowledges: POST /v1/wakes/{id}/ack")
    resumed_at: str | None = Field(description="when the task acknowledged its wake")
    redeliveries: int = Field(description="times the wake was sent again, unacknowledged")


class TaskWaits(BaseModel):
    task: str
    waits: list[TaskWaitPublic]


# --- inbound replies --------------------------------------------------------------------------


class InboundTextCreate(BaseModel):
    """A reply relayed by a chat bridge: the text starts with the case's code."""

    text: str | None = Field(default=None, max_length=REPLY_LIMIT)
    channel: str | None = Field(default=None, max_length=CHANNEL_LIMIT)
    sender: str | None = Field(default=None, max_length=SENDER_LIMIT)
    message_id: str | None = Field(default=None, max_length=SENDER_LIMIT)


class InboundAnswer(BaseModel):
    """What became of a reply that arrived by code."""

    id: str
    outcome: ReplyOutcome
    understood: str | None
    message: str
    decision: DecisionPublic | None


class InboundIgnored(BaseModel):
    """A genuine message that is not a reply (chatter, a bot's post): 200, so it is not resent."""

    ignored: str


# --- pipelines --------------------------------------------------------------------------------


class PipelineEscalationCreate(BaseModel):
    """Where the pipeline's state files are, and how to reach its orchestrator afterwards."""

    model_config = ConfigDict(extra="forbid")

    state_dir: str = Field(
        max_length=PATH_LIMIT,
        description="Absolute path of the folder holding phase_state.json (required) and the "
        "optional state files; escalation_summary.json is written there before anyone is "
        "notified.",
    )
    # The counters' own limit (200) is checked by the service with its fixed text.
    pipeline_id: str | None = Field(
        None,
        max_length=PATH_LIMIT,
        description="Names the pipeline for its counters; default: phase_state.json "
        "pipeline_id, else the state folder's path.",
    )
    severity: Severity = Severity.HIGH
    recipient: str | None = Field(
        None, max_length=ID_LIMIT, description="Who decides; default 'pipeline operator'."
    )
    command_file: str | None = Field(
        None,
        max_length=PATH_LIMIT,
        description="Absolute path where the chosen command is written as JSON on close, then "
        "its <name>.done sentinel; default: escalation_output.json in the state folder, where "
        "lullabeast's orchestrator polls.",
    )
    wake: dict[str, Text] | None = Field(None, description="Other wake-ups: {task, webhook}.")


class PipelineAccepted(EscalationAccepted):
    """The raise's answer plus the pipeline record: the offer, counters and advisory."""

    model_config = ConfigDict(extra="allow")

    note: str | None = None  # the offer's note (the cap), always present here
    pipeline_id: str
    phase: str
    offered: list[str]
    accepted: list[str]
    cap_reached: bool
    counters: dict[str, int]
    advisory: dict[str, str]


class PhaseCounters(BaseModel):
    """Resets the service has counted for one phase, and what it would offer now."""

    pipeline_id: str
    phase: str
    resets: int
    nuclear: int
    escalations: int
    offered: list[str]
    cap_reached: bool
    note: str | None


# --- the embedded demo's local channel --------------------------------------------------------


class InboxNotification(BaseModel):
    """What apprise's json:// plugin posts; `escalate inbox` prints title and message."""

    version: str | None = Field(default=None, max_length=LABEL_LIMIT)
    title: str | None = Field(default=None, max_length=REPLY_LIMIT)
    message: str | None = None  # bounded by the body cap only: it carries the whole packet
    type: str | None = Field(default=None, max_length=LABEL_LIMIT)
    attachments: list[dict[str, Text]] = Field(default_factory=list, max_length=IDS_LIMIT)
