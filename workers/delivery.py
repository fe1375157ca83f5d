"""The outbox: claim each due row under a lease, send it by its channel, record the outcome."""

from __future__ import annotations

import html
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from celery import Celery
from sqlmodel import Session, col, update

from models.db import transaction
from models.store import add_event, case_of
from models.tables import Delivery, Escalation
from workers import channels, native_pages
from workers.answering import answer_links, case_token
from workers.intake import accept
from workers.local_files import refused_paths, write_atomically
from workers.runtime import Runtime
from workers.stage_runs import nudge
from workers.unblock import settle_request_file, unblock, write_command_file
from workers.wake_acks import resumed_by_delivery
from workers.wakeups import post_webhook, send_wake_task
from workflows import payloads
from workflows.blocked_file import render_blocked
from workflows.channel_kinds import reading_of, takes_html
from workflows.delivery_failure import delivery_failure_packet
from workflows.errors import PacketRefused
from workflows.intake import DEFAULT_WAKE_QUEUE
from workflows.notifications import fill_markers
from workflows.payloads import PagePayload
from workflows.stage_results import (
    PAGES,
    DeliveryState,
    Outbound,
    Purpose,
    Role,
    Stage,
    StageResult,
    Via,
)
from workflows.states import OPEN_FOR_DECISION, State

log = logging.getLogger(__name__)

RETRY_FROM = (DeliveryState.PENDING, DeliveryState.FAILED, DeliveryState.UNKNOWN)


def per_channel(runtime: Runtime, result: StageResult) -> StageResult:
    """Expand each apprise tag into one outbox row per configured channel, each channel once."""
    outbound: dict[tuple[str, str], Outbound] = {}
    for item in result.outbound:
        if item.channel is not Via.APPRISE:
            outbound.setdefault((item.purpose, item.target), item)
            continue
        found = runtime.channels.channels(item.target)
        # A tag with no channel is recorded and retried like any failure, so the gap shows.
        targets = [channel.name for channel in found] or [f"tag:{item.target}"]
        for target in targets:  # the primary comes first, so a shared channel stays primary
            outbound.setdefault((item.purpose, target), _in_its_form(item, target))
    return replace(result, outbound=tuple(outbound.values()))


def _in_its_form(item: Outbound, target: str) -> Outbound:
    """One channel's row: the message in the form that channel is read in."""
    reading = reading_of(target)
    form = payloads.page_forms(item.payload).get("forms", {}).get(reading)
    payload = PagePayload(tag=item.target)
    if not form:
        return replace(item, target=target, payload=payload)
    html = form["html"] if takes_html(target) else ""
    payload |= {"reading": reading, "html": html, "notify_type": form["notify_type"]}
    return replace(item, target=target, title=form["title"], body=form["body"], payload=payload)


def _send_lease(settings: Any) -> timedelta:
    """Longer than the longest send (every try timing out, with backoff), so a slow send is
    never claimed and sent a second time."""
    per_try = settings.send_timeout + settings.delivery_backoff * 8
    return timedelta(seconds=settings.delivery_tries * per_try + 60)


@dataclass(frozen=True)
class Claimed:
    """An outbox row claimed under its lease, with what its message needs from the case
    (read in the claiming transaction, so a send costs no further read)."""

    delivery: Delivery
    labels: tuple[str, ...]
    pipeline: dict[str, Any] | None


def _claimable(now: datetime) -> Any:
    return (col(Delivery.state).in_(RETRY_FROM) & (col(Delivery.next_attempt_at) <= now)) | (
        (col(Delivery.state) == DeliveryState.SENDING) & (col(Delivery.lease_until) <= now)
    )


def claim_due(runtime: Runtime, escalation_id: str, *, only: int | None = None) -> list[Claimed]:
    """Claim every due outbox row of a case in one transaction (or just `only`); a page of a
    case decided meanwhile is cancelled there instead, as nobody needs asking."""
    now = datetime.now(UTC)
    # A lost lease leaves the row due: sent again at worst, never lost; so is a lost cancel.
    with transaction(runtime.engine, bookkeeping=True) as session:
        case_row = session.get(Escalation, escalation_id)
        if case_row is None:
            return []
        statement = update(Delivery).where(
            col(Delivery.escalation_id) == escalation_id, _claimable(now)
        )
        claimed = session.scalars(
            statement.values(
                state=DeliveryState.SENDING,
                attempts=Delivery.attempts + 1,  # type: ignore[operator]
                lease_until=now + _send_lease(runtime.settings),
            ).returning(Delivery),
            execution_options={"synchronize_session": False},
        ).all()
        decided = State(case_row.state) not in OPEN_FOR_DECISION
        labels = tuple(option["label"] for option in case_row.options or [])
        kept = []
        for row in sorted(claimed, key=lambda d: d.id or 0):
            if decided and row.purpose in PAGES:
                _cancel(session, case_row, row, now=now)
            else:
                kept.append(Claimed(row, labels, case_row.pipeline))
        return kept


def _cancel(session: Session, case_row: Escalation, row: Delivery, *, now: datetime) -> None:
    row.state, row.lease_until = DeliveryState.CANCELLED, None
    session.add(row)
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
    return (
        fill_markers(delivery.title, token=token, links={}),
        fill_markers(delivery.body, token=token, links=links),
        fill_markers(
            str(payloads.page(delivery.payload).get("html") or ""), token=token, links=escaped
        ),
    )


def deliver_due(app: Celery, runtime: Runtime, escalation_id: str) -> None:
    """Claim a case's due outbox rows at once, then send and record each in turn."""
    claimed = claim_due(runtime, escalation_id)
    for index, row in enumerate(claimed):
        # Each outcome is committed before the next send, so a worker's crash repeats at most
        # one send. Only the last commit waits for the disk; it makes the earlier ones durable
        # too (PostgreSQL flushes its log in order), so only a database crash in between
        # could repeat this case's earlier sends.
        send_claimed(app, runtime, row, durable=index == len(claimed) - 1)


def send_claimed(app: Celery, runtime: Runtime, claimed: Claimed, *, durable: bool = True) -> None:
    """Send one claimed row and record the outcome; a page that never arrives escalates."""
    delivery, delivery_id = claimed.delivery, claimed.delivery.id
    outcome = _send(app, runtime, claimed)
    now = datetime.now(UTC)
    settings = runtime.settings
    exhausted = False
    with transaction(runtime.engine, bookkeeping=not durable) as session:
        row = session.get(Delivery, delivery_id)
        case_row = session.get(Escalation, delivery.escalation_id)
        if row is None or case_row is None:
            return
        row.lease_until = None
        row.last_error = outcome.error
        if outcome.refs:  # kept whatever the outcome: a retry sends only what is missing
            row.platform_refs = [dict(ref) for ref in outcome.refs]
        if outcome.state == channels.SENT:
            row.state, row.sent_at = channels.SENT, now
            if outcome.error is None:
                resumed_by_delivery(session, row, now=now)
        elif outcome.state == DeliveryState.REFUSED:  # final: no retry, no next attempt
            row.state, row.next_attempt_at = DeliveryState.REFUSED, None
        elif row.attempts >= settings.delivery_max_attempts:
            row.state, exhausted = DeliveryState.ABANDONED, True
        else:
            row.state = outcome.state
            row.next_attempt_at = now + timedelta(seconds=settings.delivery_retry_interval)
        session.add(row)
        add_event(
            session,
            case_row,
            "delivery_attempt",
            {
                "delivery": row.id,
                "purpose": row.purpose,
                "channel": row.target,
                **({"queue": row.queue} if row.queue else {}),
                "role": row.role,
                "outcome": outcome.state,
                "tries": outcome.tries,
                "attempt": row.attempts,
                **({"error": outcome.error} if outcome.error else {}),
                **({"gave_up": True} if exhausted else {}),
            },
            now=now,
        )
        case = case_of(case_row)
    still_open = case.state in OPEN_FOR_DECISION
    if exhausted and delivery.purpose in PAGES and delivery.role == Role.PRIMARY and still_open:
        _escalate_undelivered(app, runtime, case, delivery, outcome.error or "unconfirmed")


def _escalate_undelivered(
    app: Celery, runtime: Runtime, case: Any, delivery: Delivery, error: str
) -> None:
    """After the limit: a second packet citing the first, and the run's fallback file."""
    fallback = case.wake.get("fallback_file")
    if isinstance(fallback, str) and (
        outside := refused_paths(
            {"fallback_file": fallback}, runtime.settings.file_roots, prefix=""
        )
    ):
        log.error("not writing the fallback file: %s", outside[0])
    elif isinstance(fallback, str):
        try:
            write_atomically(
                Path(fallback),
                render_blocked(case.packet, case.options, escalation_id=case.id),
                roots=runtime.settings.file_roots,
            )
        except OSError as exc:
            log.error("could not write fallback file %s: %s", fallback, exc)
    packet = delivery_failure_packet(
        case, target=delivery.target, attempts=delivery.attempts, error=error
    )
    if packet is None:
        return
    options = [
        {"label": "acknowledge", "description": f"I have seen it and will answer case {case.id}."}
    ]
    try:
        second = accept(runtime, {"packet": packet, "options": options}, cites_id=case.id)
    except PacketRefused as refused:
        log.error("delivery-failure packet for %s refused: %s", case.id, refused)
        return
    nudge(app, Stage.SNAPSHOT, second.id)
