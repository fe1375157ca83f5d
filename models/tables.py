"""The SQL tables: escalations, their events, deliveries, replies, decisions, sign-ins."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, Column, DateTime, Index, Table, UniqueConstraint, text
from sqlalchemy import Enum as SAEnum
from sqlmodel import Field, SQLModel

from models.sql import none_of_text, one_of_text
from workflows.judgement import ReplyOutcome
from workflows.stage_results import HELD, DeliveryState, Resolution, Role, Via
from workflows.states import TERMINAL, State


def _enum(
    kind: type[StrEnum],
    length: int,
    *,
    index: bool = False,
    nullable: bool = False,
    default: Any = None,
) -> Any:
    """A StrEnum column stored as its text value (VARCHAR, no database enum type, so a new
    member needs no migration); rows read back hold members, and a stray value is refused."""
    values = [member.value for member in kind]
    column_type = SAEnum(
        kind,
        native_enum=False,
        length=length,
        values_callable=lambda _: values,
        validate_strings=True,
    )
    return Field(default=default, sa_column=Column(column_type, index=index, nullable=nullable))


def _when(*, index: bool = False, nullable: bool = True) -> Any:
    return Field(
        default=None,
        sa_column=Column(DateTime(timezone=True), index=index, nullable=nullable),
    )


def _json_or(empty: list[Any] | dict[str, Any]) -> Any:
    """A JSON column whose default is `empty`, copied by pydantic for each new row. Not a
    default_factory: pydantic inspects a factory's signature at every row built (a new
    case's row took 0.8 ms to build with three, 0.25 ms without; docs/PERFORMANCE.md)."""
    return Field(default=empty, sa_column=Column(JSON))


def _partial_index(name: str, *columns: str, where: str) -> Index:
    """An index of the rows `where` (SQL text) holds alone, on SQLite and PostgreSQL alike."""
    return Index(name, *columns, sqlite_where=text(where), postgresql_where=text(where))


NOT_RESUMED = (
    "state = 'closed' AND resumed_at IS NULL AND ack_due_at IS NULL AND task_wait_id IS NULL"
)


OPEN_CASES = none_of_text("state", TERMINAL)


class Escalation(SQLModel, table=True):
    """One case: its packet, frozen design, state and when it next needs looking at."""

    __tablename__ = "escalations"
    __table_args__ = (
        UniqueConstraint("run_id", "packet_id", name="uq_escalation_run_packet"),
        # The sweeper's two branches, each one index range (bench/sweep.py)
        Index("ix_escalations_due", "state", "next_action_at"),
        Index("ix_escalations_stalled", "state", "updated_at"),
        # Newest first (the API's list), latest closed of a state (the console): read from
        # the end of an index, not by sorting every case a service ever had.
        Index("ix_escalations_created_at", "created_at"),
        Index("ix_escalations_ended", "state", "closed_at"),
        # Closed cases whose run never acknowledged its wake: few, asked at every /v1/stats
        # and /metrics.
        _partial_index("ix_escalations_not_resumed", "closed_at", where=NOT_RESUMED),
        # Intake's "is this question already open at this severity?" (SPEC §9), of the open
        # cases alone: a PostgreSQL without statistics (autovacuum off) read every case of a
        # severity through ix_escalations_severity instead (0097).
        _partial_index(
            "ix_escalations_open_question", "question_key", "severity", where=OPEN_CASES
        ),
    )

    id: str = Field(primary_key=True, max_length=32)
    # Found through uq_escalation_run_packet, whose first column it is: an index of its own
    # was one more to write at every UPDATE of a case (migration 0096).
    run_id: str = Field(max_length=200)
    packet_id: str = Field(max_length=200)
    # Text, not enums: a refused packet is kept as it came, wrong values included.
    severity: str = Field(index=True, max_length=16)
    trigger_type: str = Field(max_length=32)
    state: State = _enum(State, 16)
    packet: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    snapshot: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    options: list[dict[str, Any]] = _json_or([])
    wake: dict[str, Any] = _json_or({})
    design: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    design_hash: str | None = Field(default=None, max_length=64)
    # sha256 of the correlation token (workers/answering.py); the token is never stored.
    reply_token_hash: str | None = Field(default=None, max_length=64, unique=True, index=True)
    problems: list[str] = _json_or([])
    cites_id: str | None = Field(default=None, max_length=32, index=True)
    owner: str | None = Field(default=None, max_length=200)  # the run's owner, e.g. slack:U1
    # sha256 of run, trigger type and normalised blocked_on: a repeat joins the open case.
    question_key: str | None = Field(default=None, max_length=64)
    outcome: Resolution | None = _enum(Resolution, 32, nullable=True)
    # A pipeline's case (SPEC §6): its phase, the commands offered and accepted, the advisory.
    pipeline: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    attempts: int = 0
    next_action_at: datetime | None = _when(index=True)
    created_at: datetime | None = _when()
    updated_at: datetime | None = _when()
    routed_at: datetime | None = _when()
    followed_up_at: datetime | None = _when()
    decided_at: datetime | None = _when()
    closed_at: datetime | None = _when()
    # Proof the run resumed (workflows/wake_acks.py): when, and how the service learned it;
    # while none came, when the wake is sent again and how often it was.
    resumed_at: datetime | None = _when()
    resumed_via: str | None = Field(default=None, max_length=40)
    ack_due_at: datetime | None = _when(index=True)
    wake_redeliveries: int = 0
    # A blocker's decision reaches its run through its task's wake (workers/blockers.py):
    # that set's acknowledgement is this case's, so the case keeps no clock of its own.
    task_wait_id: int | None = None
    # Seconds operators added to the timeout (workflows/extensions.py), on top of the tier's.
    extended_seconds: int = 0
    # Who is on it (the latest acknowledgement) and since when (the first): reminders and
    # next-tier pages stop, nothing is decided (workflows/acknowledgements.py).
    acknowledged_by: str | None = Field(default=None, max_length=200)
    acknowledged_at: datetime | None = _when()


class Event(SQLModel, table=True):
    """One row per transition or attempt: the audit log and the replay source."""

    __tablename__ = "events"

    id: int | None = Field(default=None, primary_key=True)
    escalation_id: str = Field(foreign_key="escalations.id", index=True, max_length=32)
    at: datetime | None = _when(nullable=False)
    kind: str = Field(max_length=40)
    state: str = Field(max_length=16)
    detail: dict[str, Any] = _json_or({})


HELD_ROWS = one_of_text("state", HELD)


class Delivery(SQLModel, table=True):
    """Outbox row for anything that leaves the process: written before the send."""

    __tablename__ = "deliveries"
    __table_args__ = (
        UniqueConstraint("escalation_id", "purpose", "target", "step", name="uq_delivery_target"),
        Index("ix_deliveries_due", "state", "next_attempt_at"),
        # Every page that worked asks whether its channel holds pages to send again: a few
        # rows in the whole outbox, so they alone are indexed (workers/undelivered.py).
        _partial_index("ix_deliveries_held", "target", where=HELD_ROWS),
    )

    id: int | None = Field(default=None, primary_key=True)
    escalation_id: str = Field(foreign_key="escalations.id", index=True, max_length=32)
    # A Purpose, or task_wake:<wait id> for a task's blocker set (workers/blockers.py).
    purpose: str = Field(max_length=24)
    channel: Via = _enum(Via, 24)
    target: str = Field(max_length=500)  # apprise tag, task name, or webhook URL
    # A wake task's queue: the run's own worker's (None on rows from before: Celery's default).
    queue: str | None = Field(default=None, max_length=200)
    role: Role = _enum(Role, 16, default=Role.PRIMARY)
    # 0 for a one-off page; a chain's page number, so one tag can be paged at several levels.
    step: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    title: str = ""
    body: str = ""
    payload: dict[str, Any] = _json_or({})
    # Where a native Slack/Telegram/ntfy send landed (channel and ts, chat and message id):
    # what the case's end updates in place. Never a token.
    platform_refs: list[dict[str, Any]] | None = Field(
        default=None, sa_column=Column(JSON, nullable=True)
    )
    state: DeliveryState = _enum(DeliveryState, 16, default=DeliveryState.PENDING)
    attempts: int = 0
    last_error: str | None = None
    next_attempt_at: datetime | None = _when()
    lease_until: datetime | None = _when()
    sent_at: datetime | None = _when()
    created_at: datetime | None = _when()


class Reply(SQLModel, table=True):
    """Every reply as it arrived, with how it was understood (never a secret, never a token)."""

    __tablename__ = "replies"
    __table_args__ = (
        # A platform that delivers the same message twice (webhook retries, a re-polled
        # update) records it once.
        UniqueConstraint("channel", "platform_message_id", name="uq_reply_platform_message"),
    )

    id: int | None = Field(default=None, primary_key=True)
    escalation_id: str = Field(foreign_key="escalations.id", index=True, max_length=32)
    at: datetime | None = _when(nullable=False)
    channel: str = Field(max_length=40)
    sender: str = Field(max_length=200)
    raw_text: str
    option: str | None = None
    matched_by: str | None = Field(default=None, max_length=24)
    # 24: needs_confirmation is 18 long (migration 0008 widened the old 16).
    outcome: ReplyOutcome = _enum(ReplyOutcome, 24)
    platform_message_id: str | None = Field(default=None, max_length=200)
    parsed: dict[str, Any] = _json_or({})
    grammar_version: str | None = Field(default=None, max_length=8)
    token_id: str | None = Field(default=None, max_length=16)  # a prefix of the code's hash


class Decision(SQLModel, table=True):
    """The one decision of a case; the unique key makes the first one win."""

    __tablename__ = "decisions"
    # The console's insights read the latest decisions, newest first.
    __table_args__ = (Index("ix_decisions_at", "at"),)

    id: int | None = Field(default=None, primary_key=True)
    escalation_id: str = Field(foreign_key="escalations.id", unique=True, max_length=32)
    option: str
    value: str
    resumes: bool
    decided_by: str = Field(max_length=200)
    channel: str = Field(max_length=40)
    is_default: bool = False
    reply_id: int | None = Field(default=None, foreign_key="replies.id")
    at: datetime | None = _when(nullable=False)


class TaskWait(SQLModel, table=True):
    """A set of escalations a run's task waits on; woken once, when the last one closes. A
    task has at most one open set (woken_at null): adding blockers extends it."""

    __tablename__ = "task_waits"
    __table_args__ = (
        Index(
            "uq_task_waits_one_open",
            "task",
            unique=True,
            sqlite_where=text("woken_at IS NULL"),
            postgresql_where=text("woken_at IS NULL"),
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    task: str = Field(index=True, max_length=200)
    set_key: str = Field(max_length=64)  # the set's version (workflows/blockers.py)
    escalation_ids: list[str] = _json_or([])  # in order
    wake: dict[str, Any] = _json_or({})
    created_at: datetime | None = _when()
    woken_at: datetime | None = _when(index=True)
    # Proof the task resumed, as for a case's own wake (workers/wake_acks.py).
    resumed_at: datetime | None = _when()
    resumed_via: str | None = Field(default=None, max_length=40)
    ack_due_at: datetime | None = _when(index=True)
    wake_redeliveries: int = 0


class PipelinePhase(SQLModel, table=True):
    """Resets used in one phase of one pipeline: the service's count holds the caps (SPEC §6)."""

    __tablename__ = "pipeline_phases"

    pipeline_id: str = Field(primary_key=True, max_length=200)
    phase: str = Field(primary_key=True, max_length=200)
    resets: int = 0
    nuclear: int = 0
    escalations: int = 0  # numbers each escalation's packet_id within the phase
    updated_at: datetime | None = _when()


class DashboardSignIn(SQLModel, table=True):
    """A dashboard sign-in. The cookie holds a random key; only its sha256 is stored, so a
    copy of the database signs nobody in. Revoked at sign-out or when its token is removed."""

    __tablename__ = "dashboard_sessions"

    id: str = Field(primary_key=True, max_length=64)  # sha256 of the cookie's key
    role: str = Field(max_length=16)
    name: str = Field(default="", max_length=40)  # the operator's word at sign-in
    # A keyed hash of the bearer token that signed in: the session lives only as long as
    # that token is configured with that role.
    token_digest: str = Field(index=True, max_length=64)
    created_at: datetime | None = _when(nullable=False)
    expires_at: datetime | None = _when(index=True, nullable=False)
    revoked_at: datetime | None = _when()


def core_table(model: type[SQLModel]) -> Table:
    """A model's table, for Core statements built once past the ORM's unit of work."""
    return SQLModel.metadata.tables[str(model.__tablename__)]


CASES = core_table(Escalation)
EVENTS = core_table(Event)
OUTBOX = core_table(Delivery)
