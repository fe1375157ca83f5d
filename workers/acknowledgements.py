"""Recording an operator's acknowledgement on a locked case: from the dashboard, or from chat."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlmodel import Session, select

from models.db import transaction
from models.store import add_event, case_of, lock_escalation
from models.tables import Escalation, Event
from workers.answers import Answer
from workers.runtime import Runtime
from workflows.acknowledgements import acknowledgement, read_acknowledgement
from workflows.errors import NotFound
from workflows.judgement import ReplyOutcome
from workflows.secrets import scan_text
from workflows.states import OPEN_FOR_DECISION, State


def acknowledge(runtime: Runtime, escalation_id: str, *, by: str, reason: str) -> None:
    """Append an `acknowledged` event; raises NotFound, Conflict (closed) or InvalidInput."""
    now = datetime.now(UTC)
    with transaction(runtime.engine) as session:
        row = lock_escalation(session, escalation_id)
        if row is None:
            raise NotFound(f"no escalation {escalation_id}")
        _record(session, row, by=by, reason=reason, now=now)


def _record(
    session: Session,
    row: Escalation,
    *,
    by: str,
    reason: str,
    now: datetime,
    via: dict[str, object] | None = None,
) -> None:
    event = acknowledgement(row.id, State(row.state), by=by, reason=reason)
    add_event(session, row, event.kind, {**event.detail, **(via or {})}, now=now)
    row.updated_at = now
    session.add(row)


def acknowledge_from_chat(
    runtime: Runtime,
    escalation_id: str,
    *,
    text: str,
    by: str,
    channel: str,
    message_id: str | None,
    verified: bool,
) -> Answer | None:
    """'<code> ack' / 'on it' (or an Ack button) on an open case: who is on it, recorded once
    per platform message. None when the words are not an acknowledgement, or the case is no
    longer open: the judge then reads them as any reply (a late one is told the decision)."""
    now = datetime.now(UTC)
    with transaction(runtime.engine) as session:
        row = lock_escalation(session, escalation_id)
        if row is None:
            raise NotFound(f"no escalation {escalation_id}")
        reading = read_acknowledgement(text, case_of(row).options)
        if reading is None or State(row.state) not in OPEN_FOR_DECISION:
            return None
        if scan_text(reading.reason):  # the judge withholds it, as any reply with a secret
            return None
        told = (
            f"Recorded: {by} is on case {row.id}. Nothing is decided; answer with the code "
            "and your choice when you are ready."
        )
        if message_id and _seen(session, row.id, channel, message_id):
            return Answer(row.id, ReplyOutcome.DUPLICATE, "Already received this message.")
        reason = reading.reason or f"said so on {channel}"
        # `verified`: the platform vouched for who it is (an ntfy press or a bridge did not).
        via = {"channel": channel, "verified": verified}
        if message_id:
            via["message_id"] = message_id
        _record(session, row, by=by, reason=reason, now=now, via=via)
        return Answer(row.id, ReplyOutcome.ACKNOWLEDGED, told)


def _seen(session: Session, escalation_id: str, channel: str, message_id: str) -> bool:
    events = session.exec(
        select(Event).where(Event.escalation_id == escalation_id, Event.kind == "acknowledged")
    )
    return any(
        e.detail.get("channel") == channel and e.detail.get("message_id") == message_id
        for e in events
    )
