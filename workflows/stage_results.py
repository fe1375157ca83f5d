"""What a stage decides, as values: the stage names, events, outbox rows and decisions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from workflows.payloads import PageForms, Payload
from workflows.states import State


class Stage(StrEnum):
    """The workflow's steps; the workers map each to its Celery task."""

    SNAPSHOT = "snapshot"
    ROUTE = "route"
    DELIVER = "deliver"
    FOLLOW_UP = "follow_up"
    TIMEOUT = "timeout"
    CLOSE = "close"


SYSTEM = "system"


class Purpose(StrEnum):
    """Why an outbox row exists."""

    NOTIFY = "notify"  # the first page, to the tier's primary and its copies
    FOLLOW_UP = "follow_up"  # the one reminder, and the next tier's page
    CHAIN = "chain"  # a level of the tier's escalation chain (workflows/chains.py)
    WAKE_TASK = "wake_task"  # the run's own Celery task
    WAKE_WEBHOOK = "wake_webhook"  # the run's webhook
    UNBLOCK = "unblock"  # a shell loop's BLOCKED.md becomes DECISION.md
    COMMAND_FILE = "command_file"  # a pipeline orchestrator's command file
    REQUEST_FILE = "request_file"  # a JobClaw request file, resolved or expired
    RESOLUTION = "resolution"  # every paged channel told how the case ended


PAGES = frozenset(
    {Purpose.NOTIFY, Purpose.FOLLOW_UP, Purpose.CHAIN}
)  # rows that ask a person to decide


class Via(StrEnum):
    """How an outbox row leaves the process."""

    APPRISE = "apprise"
    CELERY = "celery"
    WEBHOOK = "webhook"
    FILE = "file"


class Reading(StrEnum):
    """How a channel is read, so what form its message takes (workflows/channel_kinds.py)."""

    CHAT = "chat"  # short; a reply on the channel answers
    BUTTONS = "buttons"  # short; the notification's buttons answer (ntfy)
    PUSH = "push"  # short; no way back on the channel: the case page answers
    MAIL = "mail"  # a subject, the full text and an HTML part; links answer


class Role(StrEnum):
    """Whom a page is for."""

    PRIMARY = "primary"
    COPY = "copy"
    NEXT_TIER = "next_tier"


class DeliveryState(StrEnum):
    PENDING = "pending"
    WAITING = "waiting"  # due later: a chain's level, or a page held for working hours
    SENDING = "sending"  # claimed under a lease
    SENT = "sent"
    FAILED = "failed"
    UNKNOWN = "unknown"  # the send may or may not have reached the peer
    ABANDONED = "abandoned"  # out of attempts
    CANCELLED = "cancelled"  # a page no longer needed: the case was decided
    REFUSED = "refused"  # a run's target the allow-list refuses: final, not retried


# Not sent, and not being sent: due now or later (a chain's level, a held page), failed and
# retried, or unknown and sent again. A claim may take it; a page no longer needed may be
# cancelled in it.
UNSENT = (
    DeliveryState.PENDING,
    DeliveryState.FAILED,
    DeliveryState.UNKNOWN,
    DeliveryState.WAITING,
)

# A page given up on, or sent with no answer (it may have arrived): held until its channel
# is seen working again, then re-sent, marked. Rare, so the outbox keeps an index of these
# rows alone (models/tables.py, ix_deliveries_held), asked after every page that worked.
HELD = (DeliveryState.ABANDONED, DeliveryState.UNKNOWN)


class Resolution(StrEnum):
    """How a case ended, as every interface tells the run (README: what the run sees)."""

    DECIDED = "decided"  # a person chose an option: who, when, which
    DEFAULTED = "defaulted"  # nobody decided in time: the design's default action, no person
    RECONCILE_FIRST = "reconcile_first"  # decided or defaulted, but the world changed meanwhile
    REFUSED = "refused"  # the packet failed its checks; nothing was sent
    PARKED = "parked"  # a stage kept failing (dead_letter); a person must retry it
    CANCELLED = "cancelled"  # withdrawn before anyone decided

    @property
    def is_decision(self) -> bool:
        """An answer (a person's or the default) that the run acts on."""
        return self in (Resolution.DECIDED, Resolution.DEFAULTED, Resolution.RECONCILE_FIRST)


@dataclass(frozen=True)
class CaseUpdate:
    """The columns a stage sets beside the state; None leaves a column as it is."""

    snapshot: Mapping[str, Any] | None = None
    problems: tuple[str, ...] | None = None
    drop_packet: bool = False  # a refused packet is not kept
    routed_at: datetime | None = None
    followed_up_at: datetime | None = None
    decided_at: datetime | None = None
    closed_at: datetime | None = None
    outcome: Resolution | None = None
    reply_token_hash: str | None = None  # the worker derives it: the code needs the key
    acknowledged_by: str | None = None  # who is on it
    ack_due_at: datetime | None = None  # when the run should have acknowledged its wake
    task_wait_id: int | None = None  # a blocker: its task's wake carries the decision


@dataclass(frozen=True)
class EventSpec:
    """An event row to append."""

    kind: str
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Outbound:
    """A delivery (outbox row) to write before anything is sent."""

    purpose: Purpose
    channel: Via
    target: str  # an apprise tag, a task name, a webhook URL or a file path
    role: Role = Role.PRIMARY
    title: str = ""
    body: str = ""
    payload: Payload = field(default_factory=lambda: PageForms(forms={}))  # by purpose
    queue: str | None = None  # Via.CELERY: the run's own queue the task is sent to
    step: int = 0  # a chain's page number; 0 for a one-off
    not_before: datetime | None = None  # written as waiting until then (hours, chain delay)


@dataclass(frozen=True)
class DecisionSpec:
    """A decision to record; at most one per case, the database enforces it."""

    option: str
    value: str
    resumes: bool
    decided_by: str
    channel: str
    is_default: bool = False


@dataclass(frozen=True)
class StageResult:
    """What a stage decided: the next state and everything to write with it."""

    state: State
    events: tuple[EventSpec, ...]
    next_action_at: datetime | None = None
    outbound: tuple[Outbound, ...] = ()
    updates: CaseUpdate = CaseUpdate()
    decision: DecisionSpec | None = None
    next_stage: Stage | None = None
