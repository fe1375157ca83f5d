"""The outbox: claim each due row under a lease, send it by its channel, record the outcome."""

from __future__ import annotations

import html
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from celery import Celery
from sqlmodel import col, select, update

from models.db import transaction
from models.store import add_event, case_of
from models.tables import Delivery, Escalation
from workers import channels, native_pages
from workers.answering import answer_links, case_token
from workers.local_files import refused_paths
from workers.runtime import Runtime
from workers.stage_runs import nudge
from workers.unblock import settle_request_file, unblock, write_command_file
from workers.undelivered import escalate_undelivered, resend_on_recovery
from workers.wake_acks import resumed_by_delivery
from workers.wakeups import post_webhook, send_wake_task
from workflows.intake import DEFAULT_WAKE_QUEUE
from workflows.notifications import fill_cited_markers, fill_markers
from workflows.stage_results import (
    PAGES,
    DeliveryState,
    Purpose,
    Role,
    Stage,
    Via,
)
from workflows.states import OPEN_FOR_DECISION, State

log = logging.getLogger(__name__)

RETRY_FROM = (
    DeliveryState.PENDING,
    DeliveryState.FAILED,
    DeliveryState.UNKNOWN,
    DeliveryState.WAITING,
)


def _send_lease(settings: Any) -> timedelta:
    """Longer than the longest send (every try timing out, with backoff), so a slow send is
    never claimed and sent a second time."""
    per_try = settings.send_timeout + settings.delivery_backoff * 8
    return timedelta(seconds=settings.delivery_tries * per_try + 60)


def _claim(runtime: Runtime, delivery_id: int) -> Delivery | None:
    now = datetime.now(UTC)
    with transaction(runtime.engine) as session:
        claimable = (
            col(Delivery.state).in_(RETRY_FROM) & (col(Delivery.next_attempt_at) <= now)
        ) | ((col(Delivery.state) == DeliveryState.SENDING) & (col(Delivery.lease_until) <= now))
        claimed = session.execute(
            update(Delivery)
            .where(col(Delivery.id) == delivery_id, claimable)
            .values(
                state=DeliveryState.SENDING,
                attempts=Delivery.attempts + 1,  # type: ignore[operator]
                lease_until=now + _send_lease(runtime.settings),
            )
        )
        if claimed.rowcount != 1:  # type: ignore[attr-defined]
            return None
        return session.get(Delivery, delivery_id)


def _send_wake_task(app: Celery, runtime: Runtime, delivery: Delivery) -> channels.SendOutcome:
    queue = delivery.queue or DEFAULT_WAKE_QUEUE
    return send_wake_task(app, delivery.target, delivery.payload, queue=queue)


def _send_webhook(_app: Celery, runtime: Runtime, delivery: Delivery) -> channels.SendOutcome:
    return post_webhook(
        delivery.target,
        delivery.payload,
        secret=runtime.webhook_secret,
        timeout=runtime.settings.send_timeout,
        policy=runtime.outbound,
    )


def _outside_files_root(runtime: Runtime, delivery: Delivery) -> channels.SendOutcome | None:
    """Checked again at write time: a folder swapped for a link since intake is refused."""
    written = {"target": delivery.target} | {
        key: delivery.payload.get(key)
        for key in ("decision_file", "decisions_log", "plan_file", "named_file")
    }
    outside = refused_paths(written, runtime.settings.file_roots, prefix="")
    return channels.SendOutcome(channels.FAILED, outside[0][:500]) if outside else None


def _write_command_file(_app: Celery, runtime: Runtime, delivery: Delivery) -> channels.SendOutcome:
    """A pipeline's orchestrator reads it (SPEC §6)."""
    try:
        write_command_file(
            Path(delivery.target), delivery.payload, roots=runtime.settings.file_roots
        )
    except OSError as exc:
        return channels.SendOutcome(channels.FAILED, f"{type(exc).__name__}: {exc}"[:500])
    return channels.SendOutcome(channels.SENT)


def _write_file(app: Celery, runtime: Runtime, delivery: Delivery) -> channels.SendOutcome:
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
            Path(delivery.target), delivery.payload, roots=runtime.settings.file_roots
        )
    except (OSError, KeyError, ValueError) as exc:
        return channels.SendOutcome(channels.FAILED, f"{type(exc).__name__}: {exc}"[:500])
    if left is not None:
        log.warning("request file for %s: %s", delivery.escalation_id, left)
    return channels.SendOutcome(channels.SENT)


def _unblock(_app: Celery, runtime: Runtime, delivery: Delivery) -> channels.SendOutcome:
    """A shell loop's BLOCKED.md on this host becomes its DECISION.md (SPEC §5)."""
    try:
        left = unblock(delivery.payload, runtime.settings.file_roots)
    except (OSError, KeyError) as exc:
        return channels.SendOutcome(channels.FAILED, f"{type(exc).__name__}: {exc}"[:500])
    if left:  # written, but BLOCKED.md stayed: the loop has not been released
        log.warning("escalation %s: %s", delivery.escalation_id, left)
    return channels.SendOutcome(channels.SENT, left)


def _page(_app: Celery, runtime: Runtime, delivery: Delivery) -> channels.SendOutcome:
    settings = runtime.settings
    tag = str(delivery.payload.get("tag", ""))
    channel = runtime.channels.channel(tag, delivery.target)
    if channel is None:
        return channels.SendOutcome(channels.FAILED, f"no apprise channel has tag '{tag}'")
    title, body, html = _personalised(runtime, delivery, tag)
    if native_pages.is_native(channel):  # buttons, and an update in place when it ends
        return native_pages.send(runtime, delivery, channel, title=title, body=body)
    return channels.send(
        channel,
        title=title,
        body=body,
        html=html,
        notify_type=str(delivery.payload.get("notify_type") or "info"),
        tries=settings.delivery_tries,
        first_backoff=settings.delivery_backoff,
        timeout=settings.send_timeout,
    )


Sender = Callable[[Celery, Runtime, Delivery], channels.SendOutcome]
SENDERS: dict[Via, Sender] = {
    Via.APPRISE: _page,
    Via.CELERY: _send_wake_task,
    Via.WEBHOOK: _send_webhook,
    Via.FILE: _write_file,
}


def _send(app: Celery, runtime: Runtime, delivery: Delivery) -> channels.SendOutcome:
    return SENDERS[delivery.channel](app, runtime, delivery)


def _personalised(runtime: Runtime, delivery: Delivery, tag: str) -> tuple[str, str, str]:
    """Title, text and HTML with this case's reply token and this channel's answer links."""
    with transaction(runtime.engine) as session:
        row = session.get(Escalation, delivery.escalation_id)
        labels = [option["label"] for option in (row.options if row else [])]
        pipeline = row.pipeline if row else None
        cited = session.get(Escalation, row.cites_id) if row and row.cites_id else None
        cited_labels = [option["label"] for option in (cited.options if cited else [])]
        if cited is not None:
            session.expunge(cited)
    key = runtime.answer_key
    token = case_token(key, delivery.escalation_id, pipeline)
    links = answer_links(
        key, runtime.settings.resolved_public_url, delivery.escalation_id, labels, via=tag
    )
    # The HTML part was escaped by its template: its markers carry escaped labels.
    escaped = {html.escape(label): html.escape(url) for label, url in links.items()}
    title = fill_markers(delivery.title, token=token, links={})
    body = fill_markers(delivery.body, token=token, links=links)
    markup = fill_markers(str(delivery.payload.get("html") or ""), token=token, links=escaped)
    if cited is not None:  # a delivery-failure notice: the original's code and links
        cited_token = case_token(key, cited.id, cited.pipeline)
        cited_links = answer_links(
            key, runtime.settings.resolved_public_url, cited.id, cited_labels, via=tag
        )
        cited_escaped = {html.escape(k): html.escape(v) for k, v in cited_links.items()}
        body = fill_cited_markers(body, token=cited_token, links=cited_links)
        markup = fill_cited_markers(markup, token=cited_token, links=cited_escaped)
    note = delivery.payload.get("resent_note")
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


def deliver_one(app: Celery, runtime: Runtime, delivery_id: int) -> None:
    """Claim one outbox row, send it, record the outcome; a page that never arrives escalates."""
    delivery = _claim(runtime, delivery_id)
    if delivery is None:
        return
    if delivery.purpose in PAGES and _cancel_if_decided(runtime, delivery):
        return
    outcome = _send(app, runtime, delivery)
    now = datetime.now(UTC)
    settings = runtime.settings
    exhausted = False
    with transaction(runtime.engine) as session:
        row = session.get(Delivery, delivery_id)
        case_row = session.get(Escalation, delivery.escalation_id)
        if row is None or case_row is None:
            return
        row.lease_until = None
        row.last_error = outcome.error
        resent: list[str] = []
        held = False
        if outcome.refs:  # kept whatever the outcome: a retry sends only what is missing
            row.platform_refs = [dict(ref) for ref in outcome.refs]
        if outcome.state == channels.SENT:
            row.state, row.sent_at = channels.SENT, now
            if outcome.error is None:
                resumed_by_delivery(session, row, now=now)
            resent = resend_on_recovery(session, row, now=now)
        elif outcome.state == DeliveryState.REFUSED:  # final: no retry, no next attempt
            row.state, row.next_attempt_at = DeliveryState.REFUSED, None
        elif outcome.state == DeliveryState.UNKNOWN and row.channel is Via.APPRISE:
            # The request went out and no answer came: it may have arrived. Not sent again on
            # the interval (a person paged twice learns to ignore pages); re-sent, marked,
            # once a later send on this channel works (workers/undelivered.py).
            row.state, row.next_attempt_at, held = DeliveryState.UNKNOWN, None, True
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
                **({"held_until_channel_works": True} if held else {}),
            },
            now=now,
        )
        case = case_of(case_row)
    for escalation_id in resent:
        nudge(app, Stage.DELIVER, escalation_id)
    if not exhausted or delivery.purpose not in PAGES or case.state not in OPEN_FOR_DECISION:
        return
    # The decider's page gave up: escalate it. Any other channel giving up afterwards joins
    # that second case and is named there.
    if delivery.role == Role.PRIMARY or _already_escalated(runtime, case.id):
        escalate_undelivered(app, runtime, case, delivery, outcome.error or "unconfirmed")


def _already_escalated(runtime: Runtime, escalation_id: str) -> bool:
    with transaction(runtime.engine) as session:
        found = session.exec(
            select(Escalation.id).where(Escalation.cites_id == escalation_id)
        ).first()
        return found is not None


def _cancel_if_decided(runtime: Runtime, delivery: Delivery) -> bool:
    """A page still queued when the case was decided is not sent: nobody needs asking."""
    now = datetime.now(UTC)
    with transaction(runtime.engine) as session:
        case_row = session.get(Escalation, delivery.escalation_id)
        row = session.get(Delivery, delivery.id)
        if case_row is None or row is None or State(case_row.state) in OPEN_FOR_DECISION:
            return False
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
        return True
