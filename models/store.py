"""Data functions over the tables: lock a case, apply a stage's decision, record replies."""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from dataclasses import fields as dataclass_fields
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any, Protocol

from sqlalchemy import bindparam, func, insert, text, update
from sqlalchemy import inspect as sa_inspect
from sqlalchemy import select as sa_select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, SQLModel, col, select

from models.sql import none_of, one_of
from models.tables import (
    CASES,
    EVENTS,
    OUTBOX,
    Decision,
    Delivery,
    Escalation,
    Event,
    PipelinePhase,
    Reply,
    core_table,
)
from workflows.case import Case, parse_options
from workflows.design import Design, parse_design
from workflows.errors import DesignError
from workflows.judgement import ReplyOutcome
from workflows.reasons import EVENT_KINDS as REASON_EVENTS
from workflows.reasons import reasons_of
from workflows.stage_results import (
    CaseUpdate,
    DecisionSpec,
    DeliveryState,
    EventSpec,
    Outbound,
    Resolution,
    StageResult,
)
from workflows.states import OPEN, OPEN_FOR_DECISION, TERMINAL, State


def new_id() -> str:
    """A 12-hex-character case id (SPEC §7)."""
    return secrets.token_hex(6)


def as_utc(moment: datetime | None) -> datetime | None:
    """SQLite hands datetimes back naive; they were written in UTC."""
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)


def iso(moment: datetime | None) -> str | None:
    """A stored time as ISO 8601 in UTC (SQLite hands them back naive)."""
    moment = as_utc(moment)
    return moment.isoformat() if moment else None


def lock_pipeline_phase(
    session: Session, pipeline_id: str, phase: str, *, now: datetime
) -> PipelinePhase:
    """One phase's counters, created at zero when new, locked for this transaction."""
    new = {"pipeline_id": pipeline_id, "phase": phase, "updated_at": now}
    session.execute(
        _dialect_insert(session)(PipelinePhase)
        .values(**new, resets=0, nuclear=0, escalations=0)
        .on_conflict_do_nothing()
    )
    statement = (
        select(PipelinePhase)
        .where(PipelinePhase.pipeline_id == pipeline_id, PipelinePhase.phase == phase)
        .with_for_update()
    )
    return session.exec(statement).one()


def token_taken(session: Session, digest: str) -> bool:
    """Whether some case already answers to this reply-code hash."""
    found = session.exec(select(Escalation.id).where(Escalation.reply_token_hash == digest))
    return found.first() is not None


_CASE_DELIVERIES = (
    select(Delivery).where(Delivery.escalation_id == bindparam("case")).order_by(col(Delivery.id))
)


def deliveries_of(session: Session, escalation_id: str) -> Sequence[Delivery]:
    """Every outbox row of the case, oldest first."""
    return session.exec(_CASE_DELIVERIES, params={"case": escalation_id}).all()


_LOCK_CASE = select(Escalation).where(Escalation.id == bindparam("case")).with_for_update()


def lock_escalation(session: Session, escalation_id: str) -> Escalation | None:
    """The case row, locked for this transaction (SQLite: BEGIN IMMEDIATE already holds it)."""
    return session.exec(_LOCK_CASE, params={"case": escalation_id}).first()


def case_of(row: Escalation) -> Case:
    """The pure view of a row."""
    return Case(
        id=row.id,
        run_id=row.run_id,
        packet_id=row.packet_id,
        state=State(row.state),
        packet=row.packet or {},
        snapshot=row.snapshot or {},
        options=parse_options(row.options),
        wake=row.wake or {},
        cites_id=row.cites_id,
        pipeline=row.pipeline or {},
        created_at=as_utc(row.created_at),
        routed_at=as_utc(row.routed_at),
        extended=timedelta(seconds=row.extended_seconds or 0),
        acknowledged_by=row.acknowledged_by,
    )


def design_of(row: Escalation) -> Design:
    """The design the case was routed with, frozen at intake (each version parsed once)."""
    # Keyed by the stored content itself, not design_hash: a row whose design was altered
    # must not be served the parse of what it used to hold.
    try:
        return _parsed_design(json.dumps(row.design, sort_keys=True))
    except DesignError:  # parsed again, so the problems name this case
        return parse_design(row.design, source=f"escalation {row.id}")


@lru_cache(maxsize=64)
def _parsed_design(content: str) -> Design:
    return parse_design(json.loads(content), source="a stored design")


def resolution_of(row: Escalation) -> Resolution | None:
    """How the case ended, as the run is told; None while it is open. A parked case reads
    as parked while it stays in dead_letter (a retry puts it back in the workflow)."""
    if row.state == State.DEAD_LETTER:
        return Resolution.PARKED
    if row.state == State.REFUSED:
        return Resolution.REFUSED
    return Resolution(row.outcome) if row.outcome else None


class Stamped(Protocol):
    """What an event is stamped from: a case row, or only its id and state where reading
    the whole row (its packet, snapshot and design) would cost more than the event."""

    @property
    def id(self) -> str: ...

    @property
    def state(self) -> State: ...


@dataclass(frozen=True)
class CaseState:
    """A case's id and state alone: what an event is stamped with."""

    id: str
    state: State


def add_event(
    session: Session, row: Stamped, kind: str, detail: Mapping[str, Any], *, now: datetime
) -> None:
    """Append one event row for the case, stamped with its current state."""
    session.add(
        Event(escalation_id=row.id, at=now, kind=kind, state=row.state, detail=dict(detail))
    )


# The record of every send is on the hot path (five a case): Core statements built once, past
# the ORM's unit of work, which cost more than the send itself (docs/PERFORMANCE.md).
_INSERT_EVENT = insert(EVENTS)


def stamped_event_insert(*when: ColumnElement[bool]) -> Insert:
    """An event of case `case` (`at`, `kind`, `detail`: bound) stamped with the case's state
    as stored, read by the INSERT itself, and returning it; written only `when` holds."""
    return (
        insert(EVENTS)
        .from_select(
            ["escalation_id", "at", "kind", "state", "detail"],
            sa_select(
                CASES.c.id,
                bindparam("at", type_=EVENTS.c.at.type),
                bindparam("kind", type_=EVENTS.c.kind.type),
                CASES.c.state,
                bindparam("detail", type_=EVENTS.c.detail.type),
            ).where(CASES.c.id == bindparam("case"), *when),
        )
        .returning(EVENTS.c.state)
    )


_STAMP_EVENT = stamped_event_insert()
_INSERT_DELIVERY = insert(OUTBOX)
# What a new outbox row holds besides its Outbound's fields (Core applies no model defaults).
_UNSENT_DELIVERY = {
    "attempts": 0,
    "platform_refs": None,
    "last_error": None,
    "lease_until": None,
    "sent_at": None,
}
# No SET clause: an execution's parameters name the columns it sets.
_UPDATE_DELIVERY = update(OUTBOX).where(OUTBOX.c.id == bindparam("row"))


def stamp_event(
    session: Session, escalation_id: str, kind: str, detail: Mapping[str, Any], *, now: datetime
) -> State | None:
    """Append an event stamped with the case's state as stored, read in the same statement
    (the whole row, packet and design, costs more than a send's record); that state, or
    None when there is no such case."""
    state = (
        session.connection()
        .execute(
            _STAMP_EVENT, {"case": escalation_id, "at": now, "kind": kind, "detail": dict(detail)}
        )
        .scalar()
    )
    return None if state is None else State(state)


def append_event(
    session: Session, row: Stamped, kind: str, detail: Mapping[str, Any], *, now: datetime
) -> None:
    """`add_event` as one INSERT sent now, for a transaction that holds no ORM objects."""
    append_events(session, row, [EventSpec(kind, detail)], now=now)


def append_events(
    session: Session, row: Stamped, events: Sequence[EventSpec], *, now: datetime
) -> None:
    """Several events of one case in one INSERT sent now, each stamped with its state."""
    if events:
        stamp = {"escalation_id": row.id, "at": now, "state": row.state}
        rows = [{**stamp, "kind": event.kind, "detail": dict(event.detail)} for event in events]
        session.connection().execute(_INSERT_EVENT, rows)


def update_delivery(session: Session, delivery_id: int | None, values: Mapping[str, Any]) -> None:
    """Set an outbox row's columns in one UPDATE sent now (the row is not loaded)."""
    session.connection().execute(_UPDATE_DELIVERY, {**values, "row": delivery_id})


def stop_pages(
    session: Session,
    row: Escalation,
    unsent: Sequence[Delivery],
    detail: Mapping[str, Any],
    *,
    now: datetime,
) -> None:
    """Cancel pages that will ask nobody now (decided, or acknowledged), in one event."""
    for delivery in unsent:
        delivery.state = DeliveryState.CANCELLED  # its due time stays, for the record
        session.add(delivery)
    if unsent:
        deliveries = {"deliveries": [d.id for d in unsent]}
        add_event(session, row, "pages_stopped", {**detail, **deliveries}, now=now)
        # Written now: the Core writes after it (the close's events, the outbox claim, which
        # takes waiting rows too) neither flush the session nor may come before it.
        session.flush()


def apply_result(
    session: Session,
    row: Escalation,
    result: StageResult,
    *,
    now: datetime,
    reply_id: int | None = None,
) -> Decision | None:
    """Write a stage's decision: new state, fields, events, outbox rows, decision row (which
    is returned, as added)."""
    row.state = result.state
    row.next_action_at = result.next_action_at
    row.attempts = 0
    row.updated_at = now
    _apply_update(row, result.updates)
    session.add(row)
    append_events(session, row, result.events, now=now)
    add_outbound(session, row, result.outbound, now=now)
    if result.decision is None:
        return None
    decision = decision_row(row.id, result.decision, now=now, reply_id=reply_id)
    # Sent now: the unique key on decisions settles a race between two answers here.
    decision.id = (
        session.connection().execute(_INSERT_DECISION, _row_columns(decision)).scalar_one()
    )
    return decision


def write_case(session: Session, row: Escalation) -> None:
    """Send the case row's changes now, as one UPDATE of the columns changed since it was read,
    and take the row out of the session: the commit's flush (the ORM's unit of work, about
    7 % of a case's CPU) then has nothing to write for it. The row is not used after."""
    changed = tuple(sorted(sa_inspect(row).committed_state))
    if changed:
        values = {f"new_{key}": getattr(row, key) for key in changed}
        session.connection().execute(_case_update(changed), {"row": row.id, **values})
    session.expunge(row)


@lru_cache(maxsize=64)
def _case_update(columns: tuple[str, ...]) -> Any:
    """An UPDATE of these case columns, built once per set (building one costs as much as
    sending it)."""
    return (
        update(CASES)
        .where(CASES.c.id == bindparam("row"))
        .values({key: bindparam(f"new_{key}", type_=CASES.c[key].type) for key in columns})
    )


def add_outbound(
    session: Session, row: Escalation, outbound: Sequence[Outbound], *, now: datetime
) -> None:
    """Write outbox rows, in one statement sent now: pending now, or waiting until their
    `not_before`."""
    rows = []
    for item in outbound:  # Outbound's fields are the outbox row's columns
        fields = {**asdict(item), "payload": dict(item.payload)}
        not_before = fields.pop("not_before")
        later = not_before is not None and not_before > now
        rows.append(
            {
                **_UNSENT_DELIVERY,
                **fields,
                "escalation_id": row.id,
                "state": DeliveryState.WAITING if later else DeliveryState.PENDING,
                "next_attempt_at": not_before if later else now,
                "created_at": now,
            }
        )
    if rows:
        session.connection().execute(_INSERT_DELIVERY, rows)


def _apply_update(row: Escalation, update: CaseUpdate) -> None:
    if update.snapshot is not None:
        row.snapshot = dict(update.snapshot)
    if update.problems is not None:
        row.problems = list(update.problems)
    if update.drop_packet:
        row.packet = None
    row.routed_at = update.routed_at or row.routed_at
    row.followed_up_at = update.followed_up_at or row.followed_up_at
    row.decided_at = update.decided_at or row.decided_at
    row.closed_at = update.closed_at or row.closed_at
    if update.outcome is not None:
        row.outcome = update.outcome
    row.reply_token_hash = update.reply_token_hash or row.reply_token_hash
    row.ack_due_at = update.ack_due_at or row.ack_due_at
    if update.acknowledged_by is not None:
        row.acknowledged_by = update.acknowledged_by
    row.task_wait_id = update.task_wait_id or row.task_wait_id


_REASON_EVENTS = (
    sa_select(EVENTS.c.at, EVENTS.c.kind, EVENTS.c.detail)
    .where(EVENTS.c.escalation_id == bindparam("case"), one_of(EVENTS.c.kind, REASON_EVENTS))
    .order_by(EVENTS.c.id)
)


def reasons_for(session: Session, escalation_id: str) -> list[dict[str, Any]]:
    """What operators said while handling the case, oldest first (workflows/reasons.py)."""
    events = session.connection().execute(_REASON_EVENTS, {"case": escalation_id})
    return reasons_of((as_utc(at), kind, detail) for at, kind, detail in events)


def decision_row(
    escalation_id: str, spec: DecisionSpec, *, now: datetime, reply_id: int | None = None
) -> Decision:
    return Decision(escalation_id=escalation_id, **asdict(spec), reply_id=reply_id, at=now)


def decision_of(session: Session, escalation_id: str) -> Decision | None:
    return session.exec(select(Decision).where(Decision.escalation_id == escalation_id)).first()


def decision_json(decision: Decision) -> dict[str, Any]:
    return {
        "option": decision.option,
        "value": decision.value,
        "resumes": decision.resumes,
        "decided_by": decision.decided_by,
        "channel": decision.channel,
        "is_default": decision.is_default,
        "at": iso(decision.at),
    }


_DECISIONS = core_table(Decision)
_DECISION_SPEC = sa_select(
    *(_DECISIONS.c[field.name] for field in dataclass_fields(DecisionSpec))
).where(_DECISIONS.c.escalation_id == bindparam("case"))


def decision_spec_of(session: Session, escalation_id: str) -> DecisionSpec | None:
    """The case's decision as the stages read it: its spec columns alone, no ORM row."""
    found = session.connection().execute(_DECISION_SPEC, {"case": escalation_id}).first()
    return None if found is None else DecisionSpec(**found._mapping)


def find_by_packet(session: Session, run_id: str, packet_id: str) -> Escalation | None:
    statement = select(Escalation).where(
        Escalation.run_id == run_id, Escalation.packet_id == packet_id
    )
    return session.exec(statement).first()


def insert_escalation(
    session: Session, row: Escalation, event: EventSpec, *, now: datetime
) -> tuple[Escalation, bool]:
    """Insert a new case, or return the one already stored for this (run, packet).

    A packet refused earlier and now resent, fixed, under the same id takes that row over:
    the refusal stays in its events, and the case starts from `received`.
    """
    created = session.connection().execute(_insert_new_case(session), _row_columns(row)).first()
    if created is not None:
        append_event(session, row, event.kind, event.detail, now=now)
        return row, True
    # This (run, packet) is stored already, or a concurrent intake of it has just won.
    existing = find_by_packet(session, row.run_id, row.packet_id)
    if existing is None:
        raise IntegrityError("INSERT escalations", None, ValueError("an id already taken"))
    if existing.state == State.REFUSED.value and row.packet:
        for name in (
            "severity",
            "trigger_type",
            "state",
            "packet",
            "snapshot",
            "options",
            "wake",
            "design",
            "design_hash",
            "cites_id",
            "owner",
            "question_key",
            "updated_at",
            "attempts",
        ):
            setattr(existing, name, getattr(row, name))
        existing.problems, existing.outcome, existing.closed_at = [], None, None
        session.add(existing)
        add_event(session, existing, event.kind, {**event.detail, "after_refusal": True}, now=now)
        return existing, True
    return existing, False


_new_case: dict[str, Any] = {}
_INSERT_REPLY = insert(core_table(Reply)).returning(core_table(Reply).c.id)
_INSERT_DECISION = insert(core_table(Decision)).returning(core_table(Decision).c.id)


def _dialect_insert(session: Session) -> Any:
    """The INSERT construct of the session's database, which has ON CONFLICT."""
    dialect = session.get_bind().dialect.name
    return sqlite_insert if dialect == "sqlite" else postgresql_insert


def _insert_new_case(session: Session) -> Any:
    """INSERT a case unless its (run, packet) is stored: one statement, built once per
    dialect, instead of a read, a savepoint and the ORM's flush."""
    dialect = session.get_bind().dialect.name
    if dialect not in _new_case:
        _new_case[dialect] = (
            _dialect_insert(session)(CASES)
            .on_conflict_do_nothing(index_elements=["run_id", "packet_id"])
            .returning(CASES.c.id)
        )
    return _new_case[dialect]


def _row_columns(row: SQLModel) -> dict[str, Any]:
    """A new row's columns as a Core INSERT takes them (the id left to the database)."""
    table = core_table(type(row))
    values = {column.name: getattr(row, column.name) for column in table.columns}
    return {name: value for name, value in values.items() if not (name == "id" and value is None)}


_citing = CASES.alias("citing")  # an alias: the query also stands inside statements on CASES


def citing_open_cases(original: Any) -> Any:
    """The ids of the open cases that stand in for `original` (delivery-failure cases citing
    it): a case id, or a bound parameter in a statement built once."""
    return sa_select(_citing.c.id).where(
        _citing.c.cites_id == original,
        one_of(_citing.c.state, OPEN_FOR_DECISION),
    )


# Intake asks these of every new case: built once, only what it reads (the id and state).
_OPEN_FOR_QUESTION = (
    sa_select(CASES.c.id, CASES.c.state)
    .where(
        CASES.c.question_key == bindparam("question"),
        CASES.c.severity == bindparam("severity"),
        CASES.c.packet_id != bindparam("packet"),
        none_of(CASES.c.state, TERMINAL),
    )
    .limit(1)
    .with_for_update()
)
_LOCK_QUESTION = text("SELECT pg_advisory_xact_lock(:lock)")


def open_case_for_question(session: Session, row: Escalation) -> CaseState | None:
    """An open case asking the same question at the same severity (SPEC §9: never twice),
    other than a resend of this very packet. Holds the question's lock to the commit."""
    lock_question(session, row.question_key)
    found = (
        session.connection()
        .execute(
            _OPEN_FOR_QUESTION,
            {"question": row.question_key, "severity": row.severity, "packet": row.packet_id},
        )
        .first()
    )
    return None if found is None else CaseState(found.id, State(found.state))


def lock_question(session: Session, question_key: str | None) -> None:
    """Intakes of one question take turns until their transaction ends. FOR UPDATE locks only
    rows that exist: two first raises of a question both found none and both inserted (the
    chaos storm, on PostgreSQL). SQLite's BEGIN IMMEDIATE already serialises writers."""
    if question_key and session.get_bind().dialect.name == "postgresql":
        # 60 bits of the key's digest fit a bigint; a collision only makes two questions wait
        session.connection().execute(_LOCK_QUESTION, {"lock": int(question_key[:15], 16)})


def record_reply(
    session: Session,
    row: Escalation,
    *,
    channel: str,
    sender: str,
    text: str,
    option: str | None,
    matched_by: str | None,
    outcome: ReplyOutcome,
    now: datetime,
    audit: Mapping[str, Any] | None = None,
) -> Reply:
    """`audit`: platform_message_id, parsed, grammar_version, token_id (never the token)."""
    reply = Reply(
        escalation_id=row.id,
        at=now,
        channel=channel,
        sender=sender,
        raw_text=text,
        option=option,
        matched_by=matched_by,
        outcome=outcome,
        **dict(audit or {}),
    )
    reply.id = session.connection().execute(_INSERT_REPLY, _row_columns(reply)).scalar_one()
    return reply


def reply_by_platform_id(session: Session, channel: str, message_id: str) -> Reply | None:
    statement = select(Reply).where(
        Reply.channel == channel, Reply.platform_message_id == message_id
    )
    return session.exec(statement).first()


# The sweeper's queries run every few seconds over every open case: each is split into one
# query per branch of its condition, each served by an index range, because an OR of them
# made SQLite scan the whole table (bench/sweep.py: linear in the open cases).


def oldest_open_at(session: Session) -> datetime | None:
    """When the oldest case not yet ended was raised (UTC), None when none is open."""
    return as_utc(
        session.exec(
            select(func.min(Escalation.created_at)).where(one_of(col(Escalation.state), OPEN))
        ).one()
    )


def due_escalations(
    session: Session, *, now: datetime, stall_after: timedelta, limit: int = 100
) -> Sequence[Escalation]:
    """Cases whose deadline passed, or whose stage message looks lost; earliest deadline first.
    The states are written into the SQL: a prepared statement's generic plan then still reads
    the (state, time) indexes, not every case (as for every read on the sweep's path)."""
    waiting = (State.AWAITING.value, State.FOLLOWED_UP.value)
    moving = (State.RECEIVED.value, State.SNAPSHOTTED.value, State.DECIDED.value)
    past_deadline = session.exec(
        select(Escalation)
        .where(col(Escalation.next_action_at) <= now, one_of(col(Escalation.state), waiting))
        .order_by(col(Escalation.next_action_at))
        .limit(limit)
    ).all()
    stalled = session.exec(
        select(Escalation)
        .where(
            one_of(col(Escalation.state), moving), col(Escalation.updated_at) <= now - stall_after
        )
        .limit(limit)
    ).all()
    return [*past_deadline, *stalled][:limit]


def due_deliveries(
    session: Session,
    *,
    now: datetime,
    pending_grace: timedelta = timedelta(0),
    limit: int = 100,
) -> Sequence[Delivery]:
    """Outbox rows to (re)try: failed/unknown and due, pending for longer than `pending_grace`
    (its own nudge looks lost), or sending with an expired lease; oldest first."""
    branches = (
        one_of(col(Delivery.state), [DeliveryState.PENDING])
        & (col(Delivery.next_attempt_at) <= now - pending_grace),
        one_of(
            col(Delivery.state),
            (DeliveryState.FAILED, DeliveryState.UNKNOWN, DeliveryState.WAITING),
        )
        & (col(Delivery.next_attempt_at) <= now),
        one_of(col(Delivery.state), [DeliveryState.SENDING]) & (col(Delivery.lease_until) <= now),
    )
    found: dict[int | None, Delivery] = {}
    for condition in branches:
        # Ordered by the (state, next_attempt_at) index, not by id, so that it serves the limit.
        statement = (
            select(Delivery).where(condition).order_by(col(Delivery.next_attempt_at)).limit(limit)
        )
        found.update((row.id, row) for row in session.exec(statement))
    return sorted(found.values(), key=lambda row: row.id or 0)[:limit]
