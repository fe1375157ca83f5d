"""One thin task per stage: count the attempt, call the pure stage, persist, nudge the next."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from celery import shared_task
from sqlmodel import Session, col, update

from models.db import transaction
from models.store import (
    add_event,
    case_of,
    decision_of,
    decision_spec,
    due_deliveries,
    due_escalations,
)
from models.tables import Delivery, Escalation
from workers import blockers, channels, names
from workers.answering import answer_links, reply_token, token_hash
from workers.inbound.ntfy import MAX_ACTIONS
from workers.inbound.ntfy import answer_actions as answer_actions_header
from workers.intake import accept
from workers.probes import ProbeError, read_fingerprint
from workers.runtime import Runtime, runtime_for
from workers.stage_runs import begin_attempt, design_of, finish, nudge
from workers.unblock import unblock, write_command_file
from workers.wakeups import post_webhook, send_wake_task
from workflows import stages
from workflows.blocked_file import render_blocked
from workflows.errors import PacketRefused
from workflows.notifications import fill_markers
from workflows.stages import Outbound, StageResult
from workflows.states import OPEN_FOR_DECISION, State

log = logging.getLogger(__name__)

# The stage frame lives in workers.stage_runs; callers keep importing `nudge` from here.
__all__ = [
    "STAGE_OF_STATE",
    "apply_timeout",
    "close",
    "deliver",
    "escalate",
    "follow_up",
    "nudge",
    "route",
    "snapshot",
    "sweep",
]

STAGE_OF_STATE = {
    State.RECEIVED: stages.SNAPSHOT,
    State.SNAPSHOTTED: stages.ROUTE,
    State.AWAITING: stages.FOLLOW_UP,
    State.FOLLOWED_UP: stages.TIMEOUT,
    State.DECIDED: stages.CLOSE,
}
PAGES = ("notify", "follow_up")  # deliveries that ask a person to decide


def _now() -> datetime:
    return datetime.now(UTC)


def _probe(spec: Any) -> tuple[str | None, str | None]:
    try:
        return read_fingerprint(spec), None
    except ProbeError as exc:
        return None, str(exc)


def _revoke(app: Any, task_ids: Sequence[str]) -> tuple[list[str], str | None]:
    """Revoke what the run scheduled; returns (revoked ids, why not when it failed)."""
    if not task_ids:
        return [], None
    try:
        app.control.revoke(list(task_ids))
    except Exception as exc:  # e.g. a broker without broadcast (the embedded SQLite one)
        log.warning("could not revoke %s: %s", task_ids, exc)
        return [], f"{type(exc).__name__}: {exc}"[:300]
    return list(task_ids), None


@shared_task(name=names.ESCALATE, bind=True)
def escalate(
    self: Any,
    packet: Any = None,
    snapshot: Any = None,
    options: Any = None,
    wake: Any = None,
    owner: Any = None,
    **unknown: Any,
) -> dict[str, Any]:
    """Intake by name: `send_task("escalation.escalate", kwargs={"packet": {...}, ...})`."""
    runtime = runtime_for(self.app)
    given = {"snapshot": snapshot, "options": options, "wake": wake, "owner": owner}
    # Unknown keyword arguments are passed on, so the refusal names them (not a TypeError).
    request = {"packet": packet, **{k: v for k, v in given.items() if v is not None}, **unknown}
    try:
        accepted = accept(runtime, request, record_refusal=True)
    except PacketRefused as refused:
        return {"state": State.REFUSED.value, "errors": refused.problems}
    if accepted.state == State.RECEIVED:
        nudge(self.app, stages.SNAPSHOT, accepted.id)
    return {"id": accepted.id, "state": accepted.state, "created": accepted.created}


@shared_task(name=names.SNAPSHOT, bind=True)
def snapshot(self: Any, escalation_id: str) -> None:
    """Stage 1: record the last verified good state; revoke what the run scheduled."""
    runtime = runtime_for(self.app)
    if not begin_attempt(runtime, escalation_id, State.RECEIVED):
        return
    with transaction(runtime.engine) as session:
        row = session.get(Escalation, escalation_id)
        spec = dict((row.snapshot or {}) if row else {})
    fingerprint = spec.get("fingerprint") or {}
    value, error = (fingerprint["value"], None) if "value" in fingerprint else _probe(fingerprint)
    revoked, revoke_error = _revoke(self.app, spec.get("scheduled_task_ids", []))
    finish(
        self.app,
        runtime,
        escalation_id,
        State.RECEIVED,
        lambda _s, row, now: stages.record_snapshot(
            case_of(row),
            fingerprint=value,
            probe_error=error,
            revoked=revoked,
            revoke_error=revoke_error,
            now=now,
        ),
    )


def _per_channel(runtime: Runtime, result: StageResult) -> StageResult:
    """Expand each apprise tag into one outbox row per configured channel, each channel once."""
    outbound: dict[tuple[str, str], Outbound] = {}
    for item in result.outbound:
        if item.channel != "apprise":
            outbound.setdefault((item.purpose, item.target), item)
            continue
        found = runtime.channels.channels(item.target)
        # A tag with no channel is recorded and retried like any failure, so the gap shows.
        targets = [channel.name for channel in found] or [f"tag:{item.target}"]
        for target in targets:  # the primary comes first, so a shared channel stays primary
            outbound.setdefault(
                (item.purpose, target),
                replace(item, target=target, payload={"tag": item.target}),
            )
    return replace(result, outbound=tuple(outbound.values()))


@shared_task(name=names.ROUTE, bind=True)
def route(self: Any, escalation_id: str) -> None:
    """Stages 2-3: recheck the packet, route it to its tier, write the outbox rows."""
    runtime = runtime_for(self.app)
    if not begin_attempt(runtime, escalation_id, State.SNAPSHOTTED):
        return

    def decide(_session: Session, row: Escalation, now: datetime) -> StageResult:
        design = design_of(row)
        result = stages.route_case(
            case_of(row), design, public_url=runtime.settings.resolved_public_url, now=now
        )
        token = reply_token(runtime.answer_key, row.id)  # its hash lands before any send
        result = replace(
            result,
            updates={**result.updates, "reply_token_hash": token_hash(runtime.answer_key, token)},
        )
        return _per_channel(runtime, result)

    finish(self.app, runtime, escalation_id, State.SNAPSHOTTED, decide)


@shared_task(name=names.FOLLOW_UP, bind=True)
def follow_up(self: Any, escalation_id: str) -> None:
    """Stage 4: the window passed undecided; exactly one follow-up."""
    runtime = runtime_for(self.app)
    if not begin_attempt(runtime, escalation_id, State.AWAITING):
        return

    def decide(_session: Session, row: Escalation, now: datetime) -> StageResult:
        design = design_of(row)
        result = stages.follow_up(
            case_of(row), design, public_url=runtime.settings.resolved_public_url, now=now
        )
        return _per_channel(runtime, result)

    finish(self.app, runtime, escalation_id, State.AWAITING, decide)


@shared_task(name=names.TIMEOUT, bind=True)
def apply_timeout(self: Any, escalation_id: str) -> None:
    """Stage 5: nobody answered in time; the design's default is recorded as the decision."""
    runtime = runtime_for(self.app)
    if not begin_attempt(runtime, escalation_id, State.FOLLOWED_UP):
        return

    def decide(session: Session, row: Escalation, now: datetime) -> StageResult | None:
        if decision_of(session, row.id) is not None:
            return None  # a late answer got in first; it wins
        design = design_of(row)
        return stages.apply_timeout(case_of(row), design, now=now)

    finish(self.app, runtime, escalation_id, State.FOLLOWED_UP, decide)


@shared_task(name=names.CLOSE, bind=True)
def close(self: Any, escalation_id: str) -> None:
    """Stage 6: re-read the fingerprint, write the close entry, queue the wake-ups."""
    runtime = runtime_for(self.app)
    if not begin_attempt(runtime, escalation_id, State.DECIDED):
        return
    with transaction(runtime.engine) as session:
        row = session.get(Escalation, escalation_id)
        spec = ((row.snapshot or {}) if row else {}).get("fingerprint")
    current, error = _probe(spec)

    def decide(session: Session, row: Escalation, now: datetime) -> StageResult:
        decision = decision_of(session, row.id)
        if decision is None:
            raise RuntimeError(f"escalation {row.id} is decided but has no decision row")
        return stages.close_case(
            case_of(row), decision_spec(decision), current=current, probe_error=error, now=now
        )

    finish(self.app, runtime, escalation_id, State.DECIDED, decide)


@shared_task(name=names.DELIVER, bind=True)
def deliver(self: Any, escalation_id: str) -> None:
    """Send every due outbox row of a case; each claimed first, so a repeat sends nothing."""
    runtime = runtime_for(self.app)
    with transaction(runtime.engine) as session:
        ids = [d.id for d in due_deliveries(session, now=_now(), escalation_id=escalation_id)]
    for delivery_id in ids:
        if delivery_id is not None:
            _deliver_one(self.app, runtime, delivery_id)


def _send_lease(settings: Any) -> timedelta:
    """Longer than the longest send (every try timing out, with backoff), so a slow send is
    never claimed and sent a second time."""
    per_try = settings.send_timeout + settings.delivery_backoff * 8
    return timedelta(seconds=settings.delivery_tries * per_try + 60)


def _claim(runtime: Runtime, delivery_id: int) -> Delivery | None:
    now = _now()
    with transaction(runtime.engine) as session:
        claimable = (
            col(Delivery.state).in_(("pending", "failed", "unknown"))
            & (col(Delivery.next_attempt_at) <= now)
        ) | ((col(Delivery.state) == "sending") & (col(Delivery.lease_until) <= now))
        claimed = session.execute(
            update(Delivery)
            .where(col(Delivery.id) == delivery_id, claimable)
            .values(
                state="sending",
                attempts=Delivery.attempts + 1,  # type: ignore[operator]
                lease_until=now + _send_lease(runtime.settings),
            )
        )
        if claimed.rowcount != 1:  # type: ignore[attr-defined]
            return None
        return session.get(Delivery, delivery_id)


def _send(app: Any, runtime: Runtime, delivery: Delivery) -> channels.SendOutcome:
    settings = runtime.settings
    if delivery.channel == "celery":
        return send_wake_task(app, delivery.target, delivery.payload)
    if delivery.channel == "webhook":
        return post_webhook(
            delivery.target,
            delivery.payload,
            secret=runtime.webhook_secret,
            timeout=settings.send_timeout,
        )
    if delivery.purpose == "command_file":  # a pipeline's orchestrator reads it (SPEC §6)
        try:
            write_command_file(Path(delivery.target), delivery.payload)
        except OSError as exc:
            return channels.SendOutcome(channels.FAILED, f"{type(exc).__name__}: {exc}"[:500])
        return channels.SendOutcome(channels.SENT)
    if delivery.channel == "file":  # a shell loop's BLOCKED.md on this host (SPEC §5)
        try:
            left = unblock(delivery.payload)
        except (OSError, KeyError) as exc:
            return channels.SendOutcome(channels.FAILED, f"{type(exc).__name__}: {exc}"[:500])
        if left:
            log.warning("escalation %s: %s", delivery.escalation_id, left)
        return channels.SendOutcome(channels.SENT)
    tag = str(delivery.payload.get("tag", ""))
    channel = runtime.channels.channel(tag, delivery.target)
    if channel is None:
        return channels.SendOutcome(channels.FAILED, f"no apprise channel has tag '{tag}'")
    return channels.send(
        channel,
        title=delivery.title,
        body=_personalised(runtime, delivery, tag),
        tries=settings.delivery_tries,
        first_backoff=settings.delivery_backoff,
        timeout=settings.send_timeout,
        url_params=_ntfy_buttons(runtime, delivery) if channels.is_ntfy(channel) else None,
    )


def _ntfy_buttons(runtime: Runtime, delivery: Delivery) -> dict[str, str]:
    """ntfy shows up to three answer buttons that POST '<code> <option>' back to us."""
    with transaction(runtime.engine) as session:
        row = session.get(Escalation, delivery.escalation_id)
        labels = [option["label"] for option in (row.options if row else [])][:MAX_ACTIONS]
    if not labels:
        return {}
    inbound = f"{runtime.settings.resolved_public_url}/v1/inbound/ntfy"
    token = reply_token(runtime.answer_key, delivery.escalation_id)
    return {"actions": answer_actions_header([(label, inbound) for label in labels], token=token)}


def _personalised(runtime: Runtime, delivery: Delivery, tag: str) -> str:
    """The message with this case's reply token and this channel's answer links."""
    with transaction(runtime.engine) as session:
        row = session.get(Escalation, delivery.escalation_id)
        labels = [option["label"] for option in (row.options if row else [])]
    key = runtime.answer_key
    links = answer_links(
        key, runtime.settings.resolved_public_url, delivery.escalation_id, labels, via=tag
    )
    return fill_markers(delivery.body, token=reply_token(key, delivery.escalation_id), links=links)


def _deliver_one(app: Any, runtime: Runtime, delivery_id: int) -> None:
    delivery = _claim(runtime, delivery_id)
    if delivery is None:
        return
    if delivery.purpose in PAGES and _cancel_if_decided(runtime, delivery):
        return
    outcome = _send(app, runtime, delivery)
    now = _now()
    settings = runtime.settings
    exhausted = False
    with transaction(runtime.engine) as session:
        row = session.get(Delivery, delivery_id)
        case_row = session.get(Escalation, delivery.escalation_id)
        if row is None or case_row is None:
            return
        row.lease_until = None
        row.last_error = outcome.error
        if outcome.state == channels.SENT:
            row.state, row.sent_at = channels.SENT, now
        elif row.attempts >= settings.delivery_max_attempts:
            row.state, exhausted = "abandoned", True
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
    if exhausted and delivery.purpose in PAGES and delivery.role == "primary" and still_open:
        _escalate_undelivered(app, runtime, case, delivery, outcome.error or "unconfirmed")


def _cancel_if_decided(runtime: Runtime, delivery: Delivery) -> bool:
    """A page still queued when the case was decided is not sent: nobody needs asking."""
    now = _now()
    with transaction(runtime.engine) as session:
        case_row = session.get(Escalation, delivery.escalation_id)
        row = session.get(Delivery, delivery.id)
        if case_row is None or row is None or State(case_row.state) in OPEN_FOR_DECISION:
            return False
        row.state, row.lease_until = "cancelled", None
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


def _escalate_undelivered(
    app: Any, runtime: Runtime, case: Any, delivery: Delivery, error: str
) -> None:
    """After the limit: a second packet citing the first, and the run's fallback file."""
    fallback = case.wake.get("fallback_file")
    if isinstance(fallback, str):
        try:
            Path(fallback).write_text(
                render_blocked(case.packet, case.options, escalation_id=case.id), encoding="utf-8"
            )
        except OSError as exc:
            log.error("could not write fallback file %s: %s", fallback, exc)
    packet = stages.delivery_failure_packet(
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
    nudge(app, stages.SNAPSHOT, second.id)


@shared_task(name=names.SWEEP, bind=True)
def sweep(self: Any) -> dict[str, int]:
    """Beat's one job: dispatch what is due and re-drive what stalled. Safe to run twice."""
    runtime = runtime_for(self.app)
    settings = runtime.settings
    now = _now()
    stall_after = timedelta(seconds=settings.stall_after)
    dispatched: list[tuple[str, str]] = []
    with transaction(runtime.engine) as session:
        for row in due_escalations(session, now=now, stall_after=stall_after):
            state = State(row.state)
            waiting = state in (State.AWAITING, State.FOLLOWED_UP)
            # Claim with a conditional update so a second beat dispatches nothing twice.
            claim = update(Escalation).where(
                col(Escalation.id) == row.id, col(Escalation.state) == row.state
            )
            if waiting:
                claim = claim.where(col(Escalation.next_action_at) == row.next_action_at).values(
                    next_action_at=now + stall_after
                )
            else:
                claim = claim.where(col(Escalation.updated_at) == row.updated_at).values(
                    updated_at=now
                )
            if session.execute(claim).rowcount == 1:  # type: ignore[attr-defined]
                dispatched.append((STAGE_OF_STATE[state], row.id))
        wanted = {
            d.escalation_id
            for d in due_deliveries(session, now=now, pending_grace=stall_after, limit=500)
        }
    wanted.update(blockers.release_ready(runtime))  # SPEC §8: once, after the last
    for stage, escalation_id in dispatched:
        nudge(self.app, stage, escalation_id)
    for escalation_id in sorted(wanted):
        nudge(self.app, stages.DELIVER, escalation_id)
    return {"stages": len(dispatched), "deliveries": len(wanted)}
