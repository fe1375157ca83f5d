"""The outbox: claim each due row under a lease, send it by its channel, record the outcome."""

from __future__ import annotations

import html
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from celery import Celery
from sqlalchemy import bindparam
from sqlalchemy import update as sa_update
from sqlmodel import Session, select

from models.db import transaction
from models.sql import one_of
from models.store import (
    add_event,
    case_of,
    stamp_event,
    update_delivery,
)
from models.tables import OUTBOX, Delivery, Escalation
from workers import channels, native_pages
from workers.answering import answer_links, case_token
from workers.local_files import refused_paths
from workers.runtime import Runtime
from workers.stage_runs import nudge
from workers.unblock import settle_request_file, unblock, write_command_file
from workers.undelivered import (
    NOT_RECORDED,
    NotRecorded,
    escalate_undelivered,
    record_page_alone,
    record_sent_page,
    resend_on_recovery,
    worked_since,
)
from workers.wake_acks import RESUMED_BY_WRITING, resumed_by_delivery
from workers.wakeups import post_webhook, send_wake_task
from workflows import payloads
from workflows.case import Case
from workflows.intake import DEFAULT_WAKE_QUEUE
from workflows.notifications import fill_cited_markers, fill_markers
from workflows.stage_results import (
    PAGES,
    UNSENT,
    DeliveryState,
    Purpose,
    Role,
    Stage,
    Via,
)
from workflows.states import OPEN_FOR_DECISION, State

log = logging.getLogger(__name__)


def _send_lease(settings: Any) -> timedelta:
    """Longer than the longest send (every try timing out, with backoff), so a slow send is
    never claimed and sent a second time."""
    per_try = settings.send_timeout + settings.delivery_backoff * 8
    return timedelta(seconds=settings.delivery_tries * per_try + 60)


@dataclass(frozen=True)
class Cited:
    """The case a delivery-failure case stands in for: its page carries that one's code."""

    escalation_id: str
    labels: tuple[str, ...]
    pipeline: dict[str, Any] | None


@dataclass(frozen=True)
class Claimed:
    """An outbox row claimed under its lease, with what its message needs from the case
    (read in the claiming transaction, so a send costs no further read)."""

    delivery: Delivery
    labels: tuple[str, ...]
    pipeline: dict[str, Any] | None
    cited: Cited | None = None


_now: Any = bindparam("now")
# Claim every due row of a case, built once: pending or retried and due, or sending with a
# lease that ran out. A Core statement: the rows come back as plain rows, not ORM objects.
_CLAIM = (
    sa_update(OUTBOX)
    .where(
        OUTBOX.c.escalation_id == bindparam("case"),
        (one_of(OUTBOX.c.state, UNSENT) & (OUTBOX.c.next_attempt_at <= _now))
        | ((OUTBOX.c.state == DeliveryState.SENDING) & (OUTBOX.c.lease_until <= _now)),
    )
    .values(
        state=DeliveryState.SENDING,
        attempts=OUTBOX.c.attempts + 1,
        lease_until=bindparam("lease_until"),
    )
    .returning(*OUTBOX.c)
)


def claim_due(runtime: Runtime, escalation_id: str) -> list[Claimed]:
    """Claim every due outbox row of a case in one transaction; a page of a case decided
    meanwhile is cancelled there instead, as nobody needs asking."""
    now = datetime.now(UTC)
    # A lost lease leaves the row due: sent again at worst, never lost; so is a lost cancel.
    with transaction(runtime.engine, bookkeeping=True) as session:
        case_row = session.get(Escalation, escalation_id)
        if case_row is None:
            return []
        return claim_in(session, runtime, case_row, now=now)


def claim_in(
    session: Session, runtime: Runtime, case_row: Escalation, *, now: datetime
) -> list[Claimed]:
    """claim_due's work in a transaction already open on the case (a stage's own, which
    has just written the rows: claimed in its commit, they cost no transaction of their own)."""
    lease_until = now + _send_lease(runtime.settings)
    found = session.connection().execute(
        _CLAIM, {"case": case_row.id, "now": now, "lease_until": lease_until}
    )
    # Detached rows to read: every column given, so no model default is computed.
    claimed = [Delivery(**row._mapping) for row in found]
    decided = State(case_row.state) not in OPEN_FOR_DECISION
    labels = tuple(option["label"] for option in case_row.options or [])
    cited = _cited(session, case_row.cites_id) if claimed else None
    kept = []
    for row in sorted(claimed, key=lambda d: d.id or 0):
        if decided and row.purpose in PAGES:
            _cancel(session, case_row, row, now=now)
        else:
            kept.append(Claimed(row, labels, case_row.pipeline, cited))
    return kept


def _cited(session: Session, escalation_id: str | None) -> Cited | None:
    row = session.get(Escalation, escalation_id) if escalation_id else None
    if row is None:
        return None
    return Cited(row.id, tuple(option["label"] for option in row.options or []), row.pipeline)


def _cancel(session: Session, case_row: Escalation, row: Delivery, *, now: datetime) -> None:
    row.state, row.lease_until = DeliveryState.CANCELLED, None
    update_delivery(session, row.id, {"state": row.state, "lease_until": None})
    add_event(
        session,
        case_row,
        "delivery_cancelled",
        {
            "delivery": row.id,
            "purpose": row.purpose,
            "channel": row.target,
            "why": f"the case is {case_row.state}",
        },
        now=now,
    )


def _send_wake_task(app: Celery, runtime: Runtime, claimed: Claimed) -> channels.SendOutcome:
    delivery = claimed.delivery
    queue = delivery.queue or DEFAULT_WAKE_QUEUE
    return send_wake_task(app, delivery.target, delivery.payload, queue=queue)


def _send_webhook(_app: Celery, runtime: Runtime, claimed: Claimed) -> channels.SendOutcome:
    delivery = claimed.delivery
    return post_webhook(
        delivery.target,
        delivery.payload,
        secret=runtime.webhook_secret,
        timeout=runtime.settings.send_timeout,
        policy=runtime.outbound,
    )


def _outside_files_root(runtime: Runtime, delivery: Delivery) -> channels.SendOutcome | None:
    """Checked again at write time: a folder swapped for a link since intake is refused."""
    files = payloads.unblocking(delivery.payload)  # what an UNBLOCK row writes besides
    written = {
        "target": delivery.target,
        "decision_file": files.get("decision_file"),
        "decisions_log": files.get("decisions_log"),
        "plan_file": files.get("plan_file"),
        "named_file": files.get("named_file"),
    }
    outside = refused_paths(written, runtime.settings.file_roots, prefix="")
    return channels.SendOutcome(channels.FAILED, outside[0][:500]) if outside else None


def _write_command_file(_app: Celery, runtime: Runtime, delivery: Delivery) -> channels.SendOutcome:
    """A pipeline's orchestrator reads it (SPEC §6)."""
    try:
        write_command_file(
            Path(delivery.target),
            payloads.command(delivery.payload),
            roots=runtime.settings.file_roots,
        )
    except OSError as exc:
        return channels.SendOutcome(channels.FAILED, f"{type(exc).__name__}: {exc}"[:500])
    return channels.SendOutcome(channels.SENT)


def _write_file(app: Celery, runtime: Runtime, claimed: Claimed) -> channels.SendOutcome:
    delivery = claimed.delivery
    if refused := _outside_files_root(runtime, delivery):
        return refused
    if delivery.purpose == Purpose.COMMAND_FILE:
        return _write_command_file(app, runtime, delivery)
    if delivery.purpose == Purpose.REQUEST_FILE:
        return _settle_request_file(runtime, delivery)
    return _unblock(app, runtime, delivery)


def _settle_request_file(runtime: Runtime, delivery: Delivery) -> channels.SendOutcome:
    """A JobClaw request file follows its case: resolved with the decision, or expired."""
    try:
        left = settle_request_file(
            Path(delivery.target),
            payloads.request_file(delivery.payload),
            roots=runtime.settings.file_roots,
        )
    except (OSError, KeyError, ValueError) as exc:
        return channels.SendOutcome(channels.FAILED, f"{type(exc).__name__}: {exc}"[:500])
    if left is not None:
        log.warning("request file for %s: %s", delivery.escalation_id, left)
    return channels.SendOutcome(channels.SENT)


def _unblock(_app: Celery, runtime: Runtime, delivery: Delivery) -> channels.SendOutcome:
    """A shell loop's BLOCKED.md on this host becomes its DECISION.md (SPEC §5)."""
    try:
        left = unblock(payloads.unblocking(delivery.payload), runtime.settings.file_roots)
    except (OSError, KeyError) as exc:
        return channels.SendOutcome(channels.FAILED, f"{type(exc).__name__}: {exc}"[:500])
    if left:  # written, but BLOCKED.md stayed: the loop has not been released
        log.warning("escalation %s: %s", delivery.escalation_id, left)
    return channels.SendOutcome(channels.SENT, left)


def _page(_app: Celery, runtime: Runtime, claimed: Claimed) -> channels.SendOutcome:
    settings, delivery = runtime.settings, claimed.delivery
    page = payloads.page(delivery.payload)
    tag = str(page.get("tag", ""))
    channel = runtime.channels.channel(tag, delivery.target)
    if channel is None:
        return channels.SendOutcome(channels.FAILED, f"no apprise channel has tag '{tag}'")
    title, body, html = _personalised(runtime, claimed, tag)
    if native_pages.is_native(channel):  # buttons, and an update in place when it ends
        return native_pages.send(runtime, delivery, channel, title=title, body=body)
    return channels.send(
        channel,
        title=title,
        body=body,
        html=html,
        notify_type=str(page.get("notify_type") or "info"),
        tries=settings.delivery_tries,
        first_backoff=settings.delivery_backoff,
        timeout=settings.send_timeout,
    )


Sender = Callable[[Celery, Runtime, Claimed], channels.SendOutcome]
SENDERS: dict[Via, Sender] = {
    Via.APPRISE: _page,
    Via.CELERY: _send_wake_task,
    Via.WEBHOOK: _send_webhook,
    Via.FILE: _write_file,
}


def _send(app: Celery, runtime: Runtime, claimed: Claimed) -> channels.SendOutcome:
    return SENDERS[claimed.delivery.channel](app, runtime, claimed)


def _personalised(runtime: Runtime, claimed: Claimed, tag: str) -> tuple[str, str, str]:
    """Title, text and HTML with this case's reply token and this channel's answer links."""
    delivery, key = claimed.delivery, runtime.answer_key
    token = case_token(key, delivery.escalation_id, claimed.pipeline)
    links = answer_links(
        key, runtime.settings.resolved_public_url, delivery.escalation_id, claimed.labels, via=tag
    )
    # The HTML part was escaped by its template: its markers carry escaped labels.
    escaped = {html.escape(label): html.escape(url) for label, url in links.items()}
    title = fill_markers(delivery.title, token=token, links={})
    body = fill_markers(delivery.body, token=token, links=links)
    page = payloads.page(delivery.payload)
    markup = fill_markers(str(page.get("html") or ""), token=token, links=escaped)
    cited = claimed.cited
    if cited is not None:  # a delivery-failure notice: the original's code and links
        cited_token = case_token(key, cited.escalation_id, cited.pipeline)
        cited_links = answer_links(
            key, runtime.settings.resolved_public_url, cited.escalation_id, cited.labels, via=tag
        )
        cited_escaped = {html.escape(k): html.escape(v) for k, v in cited_links.items()}
        body = fill_cited_markers(body, token=cited_token, links=cited_links)
        markup = fill_cited_markers(markup, token=cited_token, links=cited_escaped)
    note = page.get("resent_note")
    if isinstance(note, str):  # a page sent again says so first
        body = f"{note}\n{body}"
        markup = _html_first(markup, note)
    return title, body, markup


def _html_first(markup: str, line: str) -> str:
    """The HTML part with one escaped paragraph first in its body."""
    opened = markup.find(">", markup.find("<body")) + 1
    if not markup or opened <= 0:
        return markup
    return f"{markup[:opened]}\n<p>{html.escape(line)}</p>{markup[opened:]}"


def deliver_due(app: Celery, runtime: Runtime, escalation_id: str) -> None:
    """Claim a case's due outbox rows at once, then send and record each in turn."""
    send_all(app, runtime, claim_due(runtime, escalation_id))


def send_here(
    session: Session, runtime: Runtime, case_row: Escalation, now: datetime
) -> Callable[[Celery], None]:
    """For a stage that wrote outbox rows (workers/stage_runs.finish): claim them in its
    transaction; what it returns sends them once that has committed."""
    claimed = claim_in(session, runtime, case_row, now=now)
    return lambda app: send_all(app, runtime, claimed)


def send_all(app: Celery, runtime: Runtime, claimed: list[Claimed]) -> None:
    """Send and record claimed rows in turn."""
    for index, row in enumerate(claimed):
        # Each outcome is committed before the next send, so a worker's crash repeats at most
        # one send. Only the last commit waits for the disk; it makes the earlier ones durable
        # too (PostgreSQL flushes its log in order), so only a database crash in between
        # could repeat this case's earlier sends.
        send_claimed(app, runtime, row, durable=index == len(claimed) - 1)


def send_claimed(app: Celery, runtime: Runtime, claimed: Claimed, *, durable: bool = True) -> None:
    """Send one claimed row and record the outcome; a page that never arrives escalates."""
    delivery = claimed.delivery
    started = datetime.now(UTC)
    outcome = _send(app, runtime, claimed)
    now = datetime.now(UTC)
    record = _record_of(delivery, outcome, runtime.settings, now=now)
    state: State | NotRecorded | None = NOT_RECORDED
    resent: list[str] = []
    # A page that worked changes nothing but its record (no run resumes by its arrival)
    page_only = delivery.channel is Via.APPRISE and delivery.purpose not in RESUMED_BY_WRITING
    if record.sent and page_only:
        detail = _attempt_detail(delivery, outcome, record, held=False)
        state = record_page_alone(
            runtime.engine, delivery, record.values, detail, durable=durable, now=now
        )
    if state is NOT_RECORDED:
        state, resent = _record_in_full(runtime, delivery, outcome, record, started, now, durable)
    for escalation_id in resent:
        nudge(app, Stage.DELIVER, escalation_id)
    if not record.exhausted or delivery.purpose not in PAGES or state not in OPEN_FOR_DECISION:
        return
    # The decider's page gave up: escalate it. Any other channel giving up afterwards joins
    # that second case and is named there.
    if case := _to_escalate(runtime, delivery.escalation_id, primary=delivery.role == Role.PRIMARY):
        escalate_undelivered(app, runtime, case, delivery, outcome.error or "unconfirmed")


def _record_in_full(
    runtime: Runtime,
    delivery: Delivery,
    outcome: channels.SendOutcome,
    record: Record,
    started: datetime,
    now: datetime,
    durable: bool,
) -> tuple[State | None, list[str]]:
    """A send's record, and what it changes besides, in one transaction: the case's state
    its event was stamped with, and the cases whose held pages are due again."""
    with transaction(runtime.engine, bookkeeping=not durable) as session:
        # The row as our claim's RETURNING left it: under the lease nothing else changes it
        # (outbox rows are never deleted), so it is not read again, only updated. The event
        # is stamped with the case's state, read by its INSERT.
        any_held = None
        if record.sent and delivery.channel is Via.APPRISE:
            any_held = record_sent_page(session, delivery, record.values)
        else:
            update_delivery(session, delivery.id, record.values)
        resent: list[str] = []
        held = record.held
        if record.sent:
            if outcome.error is None:
                resumed_by_delivery(session, delivery, now=now)
            resent = resend_on_recovery(session, delivery, now=now, any_held=any_held)
        elif held and (proof := worked_since(session, delivery, since=started)):
            # a send on this channel worked while this one hung: this one is due again
            resent, held = resend_on_recovery(session, proof, now=now), False
        state = stamp_event(
            session,
            delivery.escalation_id,
            "delivery_attempt",
            _attempt_detail(delivery, outcome, record, held=held),
            now=now,
        )
    return state, resent


def _attempt_detail(
    delivery: Delivery, outcome: channels.SendOutcome, record: Record, *, held: bool
) -> dict[str, Any]:
    """The delivery_attempt event's detail."""
    return {
        "delivery": delivery.id,
        "purpose": delivery.purpose,
        "channel": delivery.target,
        **({"queue": delivery.queue} if delivery.queue else {}),
        "role": delivery.role,
        "outcome": outcome.state,
        "tries": outcome.tries,
        "attempt": delivery.attempts,
        **({"error": outcome.error} if outcome.error else {}),
        **({"gave_up": True} if record.exhausted else {}),
        **({"held_until_channel_works": True} if held else {}),
    }


@dataclass(frozen=True)
class Record:
    """What a send's outcome writes on its outbox row; `held`: an unknown page kept until
    its channel works again; `exhausted`: the last attempt failed."""

    values: dict[str, Any]
    held: bool = False
    exhausted: bool = False

    @property
    def sent(self) -> bool:
        return bool(self.values["state"] == channels.SENT)


def _record_of(
    delivery: Delivery, outcome: channels.SendOutcome, settings: Any, *, now: datetime
) -> Record:
    values: dict[str, Any] = {"lease_until": None, "last_error": outcome.error}
    if outcome.refs:  # kept whatever the outcome: a retry sends only what is missing
        values["platform_refs"] = [dict(ref) for ref in outcome.refs]
    if outcome.state == channels.SENT:
        return Record({**values, "state": channels.SENT, "sent_at": now})
    if outcome.state == DeliveryState.REFUSED:  # final: no retry, no next attempt
        return Record({**values, "state": DeliveryState.REFUSED, "next_attempt_at": None})
    if outcome.state == DeliveryState.UNKNOWN and delivery.channel is Via.APPRISE:
        # The request went out and no answer came: it may have arrived. Not sent again on
        # the interval (a person paged twice learns to ignore pages); re-sent, marked,
        # once a later send on this channel works (workers/undelivered.py).
        held = {"state": DeliveryState.UNKNOWN, "next_attempt_at": None}
        return Record({**values, **held}, held=True)
    if delivery.attempts >= settings.delivery_max_attempts:
        return Record({**values, "state": DeliveryState.ABANDONED}, exhausted=True)
    retry_at = now + timedelta(seconds=settings.delivery_retry_interval)
    return Record({**values, "state": outcome.state, "next_attempt_at": retry_at})


def _to_escalate(runtime: Runtime, escalation_id: str, *, primary: bool) -> Case | None:
    """The case whose page gave up, read whole, if that escalates it: the decider's page
    always does; another channel's only once the case was escalated."""
    with transaction(runtime.engine) as session:
        if not primary:
            escalated = session.exec(
                select(Escalation.id).where(Escalation.cites_id == escalation_id)
            ).first()
            if escalated is None:
                return None
        case_row = session.get(Escalation, escalation_id)
        return case_of(case_row) if case_row is not None else None
