"""Delivery failures: the second case (and who joins it), its settling, and re-sends once a
channel is seen working again."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import Any

from celery import Celery
from sqlalchemy import ColumnElement, FromClause, bindparam, exists
from sqlalchemy import select as sa_select
from sqlalchemy import update as sa_update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from models.db import commit_setting, runs_alone, transaction
from models.sql import one_of
from models.store import (
    add_event,
    add_outbound,
    apply_result,
    case_of,
    citing_open_cases,
    decision_of,
    decision_spec_of,
    design_of,
    find_by_packet,
    lock_escalation,
    stamped_event_insert,
)
from models.tables import CASES, OUTBOX, Delivery, Escalation
from workers.intake import accept
from workers.local_files import refused_paths, write_atomically
from workers.per_channel import per_channel
from workers.runtime import Runtime
from workers.stage_runs import nudge
from workflows.blocked_file import render_blocked
from workflows.case import Case
from workflows.delivery_failure import (
    FAILING_KEY,
    channel_joined,
    delivery_failure_packet,
    joined_notice,
    settled_by_original,
)
from workflows.errors import PacketRefused
from workflows.stage_results import HELD, PAGES, DeliveryState, Stage, StageResult, Via
from workflows.states import OPEN_FOR_DECISION, State

log = logging.getLogger(__name__)

RESENT_NOTE = {
    DeliveryState.ABANDONED: "Sent again: this channel failed earlier and works again.",
    DeliveryState.UNKNOWN: "Sent again: an earlier send timed out; it may have arrived already.",
}


def escalate_undelivered(
    app: Celery, runtime: Runtime, case: Case, delivery: Delivery, error: str
) -> None:
    """After the limit: a second packet citing the first, and the run's fallback file; a
    channel failing after that joins the second case and is named there."""
    with transaction(runtime.engine) as session:
        existing = find_by_packet(session, case.run_id, f"{case.packet_id}-undelivered")
        second_id = existing.id if existing is not None else None
        failing = _failing_channels(session, case.id)
    if second_id is None:
        _write_fallback(runtime, case)
        packet = delivery_failure_packet(
            case, target=delivery.target, attempts=delivery.attempts, error=error, failing=failing
        )
        if packet is None:
            return
        options = [
            {
                "label": "acknowledge",
                "description": f"I have seen it and will answer case {case.id}.",
            }
        ]
        try:
            second = accept(runtime, {"packet": packet, "options": options}, cites_id=case.id)
        except PacketRefused as refused:
            log.error("delivery-failure packet for %s refused: %s", case.id, refused)
            return
        if second.created:
            _link_forward(runtime, case.id, second.id, packet[FAILING_KEY])
            nudge(app, Stage.SNAPSHOT, second.id)
        second_id = second.id  # made now, or by another channel's give-up a moment ago
    # A channel that gave up while the second case was being made is named too: it looked
    # for the case before it existed, so it is found here.
    joined = False
    with transaction(runtime.engine) as session:
        for channel in dict.fromkeys([delivery.target, *_failing_channels(session, case.id)]):
            joined |= _join(runtime, session, second_id, channel, original_id=case.id)
    if joined:
        nudge(app, Stage.DELIVER, second_id)


def _link_forward(runtime: Runtime, original_id: str, second_id: str, channels: object) -> None:
    """The original's record points at the case that carries its failure on."""
    with transaction(runtime.engine) as session:
        row = lock_escalation(session, original_id)
        if row is not None:
            add_event(
                session,
                row,
                "undelivered_escalated",
                {"case": second_id, "channels": channels},
                now=datetime.now(UTC),
            )


def _write_fallback(runtime: Runtime, case: Case) -> None:
    fallback = case.wake.get("fallback_file")
    if not isinstance(fallback, str):
        return
    if outside := refused_paths(
        {"fallback_file": fallback}, runtime.settings.file_roots, prefix=""
    ):
        log.error("not writing the fallback file: %s", outside[0])
        return
    try:
        write_atomically(
            Path(fallback),
            render_blocked(case.packet, case.options, escalation_id=case.id),
            roots=runtime.settings.file_roots,
        )
    except OSError as exc:
        log.error("could not write fallback file %s: %s", fallback, exc)


def _failing_channels(session: Session, escalation_id: str) -> list[str]:
    rows = session.exec(
        select(Delivery.target).where(
            Delivery.escalation_id == escalation_id,
            col(Delivery.purpose).in_(PAGES),
            Delivery.state == DeliveryState.ABANDONED,
        )
    ).all()
    return list(dict.fromkeys(rows))


def _join(
    runtime: Runtime, session: Session, second_id: str, channel: str, *, original_id: str
) -> bool:
    """Name a newly failing channel on the second case (its packet lists them all)."""
    row = lock_escalation(session, second_id)
    if row is None or row.packet is None:
        return False
    joined = channel_joined(case_of(row), channel)
    if joined is None:
        return False
    event, channels = joined
    now = datetime.now(UTC)
    if State(row.state) in OPEN_FOR_DECISION:  # routed: its notice named only the others
        notice = joined_notice(
            case_of(row),
            design_of(row),
            channel,
            public_url=runtime.settings.resolved_public_url,
            now=now,
        )
        result = per_channel(runtime, StageResult(State(row.state), (), outbound=(notice,)))
        add_outbound(session, row, result.outbound, now=now)
    row.packet = {**row.packet, FAILING_KEY: channels}
    session.add(row)
    add_event(session, row, event.kind, event.detail, now=now)
    original = session.get(Escalation, original_id)
    if original is not None:
        add_event(
            session, original, "undelivered_joined", {"case": row.id, **event.detail}, now=now
        )
    return True


def settle_citing(app: Celery, runtime: Runtime, original_id: str) -> None:
    """The original is decided: each open delivery-failure case citing it is settled."""
    settled: list[str] = []
    now = datetime.now(UTC)
    with transaction(runtime.engine) as session:
        # Asked at every close and nearly always empty: the citing cases first, the decision
        # only for them.
        citing = session.scalars(citing_open_cases(original_id)).all()
        spec = decision_spec_of(session, original_id) if citing else None
        if spec is None:
            return
        for escalation_id in citing:
            row = lock_escalation(session, escalation_id)
            if row is None or State(row.state) not in OPEN_FOR_DECISION:
                continue
            if decision_of(session, row.id) is not None:
                continue
            result = settled_by_original(case_of(row), original_id, spec, now=now)
            apply_result(session, row, result, now=now)
            settled.append(row.id)
    for escalation_id in settled:
        nudge(app, Stage.CLOSE, escalation_id)


def worked_since(session: Session, held: Delivery, *, since: datetime) -> Delivery | None:
    """A send on `held`'s channel that worked after `since` (while `held` hung), if any: a
    success that came first must not leave the page waiting for the next one."""
    return session.exec(
        select(Delivery)
        .where(
            Delivery.target == held.target,
            Delivery.id != held.id,
            Delivery.state == DeliveryState.SENT,
            col(Delivery.sent_at) >= since,
        )
        .limit(1)
    ).first()


# Asked after every page that worked, and nearly always empty: built once, and probed on the
# connection, past the ORM (its autoflush and result setup made the ORM query about 40 % of
# a send's record).
def _held_pages(outbox: FromClause, target: str) -> tuple[ColumnElement[bool], ...]:
    """Pages on the channel bound as `target` waiting to be sent again, other than `sent`."""
    return (
        outbox.c.target == bindparam(target),
        outbox.c.id != bindparam("sent"),
        one_of(outbox.c.purpose, PAGES),
        # Written into the SQL: psycopg prepares a statement run five times, and PostgreSQL's
        # generic plan can use the index of held rows (ix_deliveries_held) only when it sees
        # them. Bound, it read the whole outbox at every page that worked.
        one_of(outbox.c.state, HELD),
    )


_HELD_WHERE = (*_held_pages(OUTBOX, "target"), one_of(col(Escalation.state), OPEN_FOR_DECISION))
_JOIN_CASE = col(Escalation.id) == col(Delivery.escalation_id)
_ANY_HELD = select(Delivery.id).join(Escalation, _JOIN_CASE).where(*_HELD_WHERE).limit(1)
_HELD = select(Delivery, Escalation).join(Escalation, _JOIN_CASE).where(*_HELD_WHERE)


_held = OUTBOX.alias("held")
# The same question inside an UPDATE of the outbox, whose own columns a parameter named
# `target` would set: does `channel_target` hold pages to send again, of cases still open?
_ANY_HELD_ON_CHANNEL = exists().where(
    *_held_pages(_held, "channel_target"),
    exists().where(
        CASES.c.id == _held.c.escalation_id,
        one_of(CASES.c.state, OPEN_FOR_DECISION),
    ),
)
# A page's record and the question above in one statement (the record of a page that worked
# is most of a case's records). Each subquery names one table, as SQLite renders columns in
# RETURNING unqualified: every name then means the innermost table that has it.
_RECORD_SENT_PAGE = (
    sa_update(OUTBOX).where(OUTBOX.c.id == bindparam("sent")).returning(_ANY_HELD_ON_CHANNEL)
)


class NotRecorded(Enum):
    NOT_RECORDED = "not recorded"


NOT_RECORDED = NotRecorded.NOT_RECORDED

# PostgreSQL: the same record with its event, as one statement that is its own transaction
# (`transaction(..., one_statement=True)`): one round trip where BEGIN, the record, the event
# and COMMIT took four, and each one waited on the busy machine (13 % of the pool's time,
# docs/PERFORMANCE.md). It writes only when the channel holds no pages to send again, nearly
# always; otherwise nothing, and the full transaction records the page and re-sends them
# together. `sync` is this statement's own synchronous_commit. (The event is written only
# with the record: outbox rows are never deleted, so the row is there to record.)
_sync = commit_setting()
_check = sa_select(_ANY_HELD_ON_CHANNEL.label("held")).select_from(_sync).cte("held_check")
_any_held = sa_select(_check.c.held).scalar_subquery()
# What that statement sets on the row: a page that worked, nothing else (no platform refs).
_ALONE_COLUMNS = frozenset({"state", "last_error", "lease_until", "sent_at"})
_recorded = (
    sa_update(OUTBOX)
    .where(OUTBOX.c.id == bindparam("sent"), ~_any_held)
    .values({column: bindparam(column) for column in sorted(_ALONE_COLUMNS)})
    .returning(OUTBOX.c.id)
    .cte("recorded")
)
_stamped = stamped_event_insert(exists(sa_select(_recorded.c.id))).cte("stamped")
_RECORD_PAGE_ALONE = sa_select(
    _any_held.label("held"), sa_select(_stamped.c.state).scalar_subquery().label("state")
)


def record_sent_page(session: Session, sent: Delivery, values: Mapping[str, Any]) -> bool:
    """Write a page's record (`values`, its columns) and say whether its channel holds pages
    to send again now (`resend_on_recovery`'s question, asked by the same statement)."""
    found = session.connection().execute(
        _RECORD_SENT_PAGE, {**values, "sent": sent.id, "channel_target": sent.target}
    )
    return bool(found.scalar())


def record_page_alone(
    engine: Engine,
    sent: Delivery,
    values: Mapping[str, Any],
    event: Mapping[str, Any],
    *,
    durable: bool,
    now: datetime,
) -> State | NotRecorded | None:
    """A page that worked, recorded with its `event` detail in one round trip (PostgreSQL):
    the case's state the event was stamped with (None: no such case). NOT_RECORDED, with
    nothing written, when this cannot record it alone: another database, a record with more
    columns, or a channel holding pages to send again (the caller's full transaction then
    records it and re-sends those in one commit)."""
    if not runs_alone(engine) or set(values) != _ALONE_COLUMNS:
        return NOT_RECORDED
    with transaction(engine, one_statement=True) as session:
        found = (
            session.connection()
            .execute(
                _RECORD_PAGE_ALONE,
                {
                    **values,
                    "sent": sent.id,
                    "channel_target": sent.target,
                    "case": sent.escalation_id,
                    "at": now,
                    "kind": "delivery_attempt",
                    "detail": dict(event),
                    "sync": None if durable else "off",
                },
            )
            .one()
        )
    if found.held:
        return NOT_RECORDED
    return None if found.state is None else State(found.state)


def resend_on_recovery(
    session: Session, sent: Delivery, *, now: datetime, any_held: bool | None = None
) -> list[str]:
    """A send on `sent`'s channel just worked: that channel's pages given up on, or left
    unknown, for cases still open are due again, marked as sent again. The case ids.
    `any_held`: whether there are any, when `record_sent_page` has asked already.

    The probe does not flush the session: the caller's only unflushed row is `sent`, which
    it excludes (a row the caller marks held is flushed before it asks)."""
    if sent.channel is not Via.APPRISE or any_held is False:
        return []
    where = {"target": sent.target, "sent": sent.id}
    if any_held is None and session.connection().execute(_ANY_HELD, where).first() is None:
        return []
    rows = session.exec(_HELD, params=where).all()
    cases = []
    for delivery, case_row in rows:
        was = DeliveryState(delivery.state)
        delivery.payload = {**delivery.payload, "resent_note": RESENT_NOTE[was]}
        delivery.state, delivery.next_attempt_at = DeliveryState.PENDING, now
        session.add(delivery)
        add_event(
            session,
            case_row,
            "delivery_resent",
            {"delivery": delivery.id, "channel": delivery.target, "was": was, "proof": sent.id},
            now=now,
        )
        cases.append(case_row.id)
    return cases
