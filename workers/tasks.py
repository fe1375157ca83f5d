"""One thin task per stage: count the attempt, call the pure stage, persist, nudge the next."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from time import monotonic
from typing import Any

from celery import Celery, shared_task
from celery.exceptions import Reject, Retry
from sqlmodel import Session, col, update

from models.db import transaction
from models.store import (
    case_of,
    decision_of,
    decision_spec_of,
    deliveries_of,
    design_of,
    due_deliveries,
    due_escalations,
    reasons_for,
    stop_pages,
)
from models.tables import Delivery, Escalation
from workers import blockers, names
from workers.answering import case_token, token_hash
from workers.delivery import deliver_due, send_here
from workers.intake import accept_when_stored, refuse_unadmitted
from workers.per_channel import per_channel
from workers.probes import read_fingerprint
from workers.runtime import Runtime, runtime_for
from workers.stage_runs import Decide, begin_attempt, finish, nudge, run_after
from workers.undelivered import settle_citing
from workers.wake_acks import acknowledge, redeliver_due, with_ack
from workflows import payloads, routing
from workflows.closing import close_case
from workflows.errors import PacketRefused, PermanentError, ProbeError, StoreUnavailable
from workflows.intake_failures import cause_of, retry_delay, why_unadmitted
from workflows.stage_results import PAGES, DeliveryState, Stage, StageResult
from workflows.stages import record_snapshot
from workflows.states import State
from workflows.wake_acks import ResumedVia

log = logging.getLogger(__name__)

# A stage that writes outbox rows sends them in the same task (workers/stage_runs.finish).
SEND_HERE = {Stage.DELIVER: send_here}

STAGE_OF_STATE: dict[State, Stage] = {
    State.RECEIVED: Stage.SNAPSHOT,
    State.SNAPSHOTTED: Stage.ROUTE,
    State.AWAITING: Stage.FOLLOW_UP,
    State.FOLLOWED_UP: Stage.TIMEOUT,
    State.DECIDED: Stage.CLOSE,
}


def _probe(runtime: Runtime, spec: Any) -> tuple[str | None, str | None]:
    try:
        return read_fingerprint(spec, policy=runtime.outbound), None
    except ProbeError as exc:
        return None, str(exc)


def _revoke(app: Celery, task_ids: Sequence[str]) -> tuple[list[str], str | None]:
    """Revoke what the run scheduled; returns (revoked ids, why not when it failed)."""
    if not task_ids:
        return [], None
    try:
        app.control.revoke(list(task_ids))
    except Exception as exc:  # e.g. a broker without broadcast (the embedded SQLite one)
        log.warning("could not revoke %s: %s", task_ids, exc)
        return [], f"{type(exc).__name__}: {exc}"[:300]
    return list(task_ids), None


# Intake goes on to snapshot and route in its own task only while well inside its soft time
# limit (workers/app.py): after a slow store (it may retry for up to intake_retry_for) those
# stages are nudged instead.
INLINE_WITHIN = 20.0


# Explicit, whatever the app's defaults: the message is acknowledged once the case is stored,
# and a killed worker child gives it back. Retries are counted by intake_failure_retries.
@shared_task(
    name=names.ESCALATE, bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None
)
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
    started = monotonic()
    runtime = runtime_for(self.app)
    given = {"snapshot": snapshot, "options": options, "wake": wake, "owner": owner}
    # Unknown keyword arguments are passed on, so the refusal names them (not a TypeError).
    request = {"packet": packet, **{k: v for k, v in given.items() if v is not None}, **unknown}
    try:
        accepted = accept_when_stored(
            runtime, request, record_refusal=True, first_stage_until=started + INLINE_WITHIN
        )
    except PacketRefused as refused:
        return {"state": State.REFUSED.value, "errors": refused.problems}
    except StoreUnavailable as unstored:
        # The message is the escalation's only copy: it goes back to the broker unacked for
        # another delivery to store, never acked as a failure (task_acks_on_failure_or_timeout).
        log.warning("intake not stored, message given back to the broker: %s", unstored)
        raise Reject(unstored, requeue=True) from unstored
    except Exception as failed:  # an unreadable design, a fault of ours: never acked unseen
        return _not_admitted(self, runtime, request, failed)
    counted = accepted.counted_snapshot  # stored in time, with this task's attempt counted
    if accepted.state == State.RECEIVED:
        if counted is None and monotonic() - started > INLINE_WITHIN:
            # A slow store ate this task's time: the probe and the sends get a task (and a
            # time limit) of their own rather than the soft limit landing mid-send.
            nudge(self.app, Stage.SNAPSHOT, accepted.id)
        else:
            # Snapshot and route run here, not through the broker: two hops fewer a case. The
            # message is the case's no longer, so a failure there is a lost nudge (the sweeper).
            try:
                take_snapshot(self.app, runtime, accepted.id, counted=counted)
            except Exception:
                log.exception("snapshot of %s failed here; the sweeper re-drives it", accepted.id)
    return {"id": accepted.id, "state": accepted.state, "created": accepted.created}


def _not_admitted(task: Any, runtime: Runtime, request: Any, failed: Exception) -> dict[str, Any]:
    """Try the message again later; after the last try, store it refused with the cause."""
    tries = task.request.retries
    cause = cause_of(failed)
    settings = runtime.settings
    if tries < settings.intake_failure_retries:
        log.warning("intake not admitted (%s); tried again later, retry %d", cause, tries + 1)
        try:
            raise task.retry(countdown=retry_delay(settings.intake_failure_delay, tries))
        except Retry:
            raise  # the broker holds the next try: this message may be acknowledged
        except Exception as unsent:  # the next try was not sent: keep this very message
            raise Reject(unsent, requeue=True) from unsent
    problem = why_unadmitted(cause, tries=tries + 1)
    try:
        refuse_unadmitted(runtime, request, problem)
    except Exception as unstored:  # not stored either: the broker keeps the message
        log.warning("intake refusal not stored, message given back: %s", cause_of(unstored))
        raise Reject(unstored, requeue=True) from unstored
    return {"state": State.REFUSED.value, "errors": [problem]}


@shared_task(name=names.SNAPSHOT, bind=True)
def snapshot(self: Any, escalation_id: str) -> None:
    """Stage 1: record the last verified good state; revoke what the run scheduled."""
    take_snapshot(self.app, runtime_for(self.app), escalation_id)


def take_snapshot(
    app: Celery, runtime: Runtime, escalation_id: str, *, counted: dict[str, Any] | None = None
) -> None:
    """The snapshot stage, then routing in the same process. `counted`: the case's snapshot
    spec, when its intake stored it with this attempt counted."""
    if counted is None:
        started = begin_attempt(runtime, escalation_id, State.RECEIVED)
        if started is None:
            return
        counted = started.snapshot or {}
    spec = dict(counted)
    fingerprint = spec.get("fingerprint") or {}
    value, error = (
        (fingerprint["value"], None) if "value" in fingerprint else _probe(runtime, fingerprint)
    )
    revoked, revoke_error = _revoke(app, spec.get("scheduled_task_ids", []))
    finish(
        app,
        runtime,
        escalation_id,
        State.RECEIVED,
        lambda _s, row, now: record_snapshot(
            case_of(row),
            fingerprint=value,
            probe_error=error,
            revoked=revoked,
            revoke_error=revoke_error,
            now=now,
        ),
        # Lost in a database crash, the snapshot is taken again from `received` (revoking
        # twice is harmless); route's commit, which waits for the disk, makes it durable.
        repeatable=True,
        # Routing is decided and written in the snapshot's own transaction; if it fails
        # there, it runs alone here after the commit, its attempt counted by it.
        chained={Stage.ROUTE: routing_decision(runtime)},
        inline={Stage.ROUTE: run_after(route_case), **SEND_HERE},
    )


@shared_task(name=names.ROUTE, bind=True)
def route(self: Any, escalation_id: str) -> None:
    """Stages 2-3: recheck the packet, route it to its tier, write the outbox rows."""
    route_case(self.app, runtime_for(self.app), escalation_id)


def route_case(app: Celery, runtime: Runtime, escalation_id: str, *, counted: bool = False) -> None:
    """The route stage, its pages sent in the same process. `counted`: the snapshot's
    commit counted this attempt (it runs here, right after)."""
    if not counted and not begin_attempt(runtime, escalation_id, State.SNAPSHOTTED):
        return
    decide = routing_decision(runtime)
    finish(app, runtime, escalation_id, State.SNAPSHOTTED, decide, inline=SEND_HERE)


def routing_decision(runtime: Runtime) -> Decide:
    """The route stage's decision on the locked case: its tier's pages as outbox rows."""

    def decide(_session: Session, row: Escalation, now: datetime) -> StageResult:
        design = design_of(row)
        result = routing.route_case(
            case_of(row), design, public_url=runtime.settings.resolved_public_url, now=now
        )
        token = case_token(runtime.answer_key, row.id, row.pipeline)  # hashed before any send
        hashed = token_hash(runtime.answer_key, token)
        result = replace(result, updates=replace(result.updates, reply_token_hash=hashed))
        return per_channel(runtime, result)

    return decide


@shared_task(name=names.FOLLOW_UP, bind=True)
def follow_up(self: Any, escalation_id: str) -> None:
    """Stage 4: the window passed undecided; exactly one follow-up."""
    runtime = runtime_for(self.app)
    if not begin_attempt(runtime, escalation_id, State.AWAITING):
        return

    def decide(_session: Session, row: Escalation, now: datetime) -> StageResult:
        design = design_of(row)
        result = routing.follow_up(
            case_of(row), design, public_url=runtime.settings.resolved_public_url, now=now
        )
        return per_channel(runtime, result)

    finish(self.app, runtime, escalation_id, State.AWAITING, decide, inline=SEND_HERE)


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
        return routing.apply_timeout(
            case_of(row), design, public_url=runtime.settings.resolved_public_url, now=now
        )

    finish(self.app, runtime, escalation_id, State.FOLLOWED_UP, decide, inline=SEND_HERE)


@shared_task(name=names.CLOSE, bind=True)
def close(self: Any, escalation_id: str) -> None:
    """Stage 6: re-read the fingerprint, write the close entry, queue the wake-ups."""
    runtime = runtime_for(self.app)
    started = begin_attempt(runtime, escalation_id, State.DECIDED)
    if started is None or started.cited:
        # A delivery-failure case citing this one is settled by its decision (idempotent),
        # before the close: also on a repeat of this message, or for a case parked here.
        settle_citing(self.app, runtime, escalation_id)
    if started is None:
        return
    spec = (started.snapshot or {}).get("fingerprint")
    current, error = _probe(runtime, spec)

    def decide(session: Session, row: Escalation, now: datetime) -> StageResult:
        decision = decision_spec_of(session, row.id)
        if decision is None:
            raise PermanentError(f"escalation {row.id} is decided but has no decision row")
        deliveries = deliveries_of(session, row.id)
        stop_waiting_pages(session, row, deliveries, now=now)
        paged = {
            str(payloads.page(d.payload).get("tag"))
            for d in deliveries
            # a page cancelled unsent asked nobody: its tag needs no notice
            if d.purpose in PAGES and payloads.page(d.payload).get("tag") and d.state != "cancelled"
        }
        result = close_case(
            case_of(row),
            decision,
            current=current,
            probe_error=error,
            now=now,
            paged=sorted(paged),
            reasons=reasons_for(session, row.id),
        )
        task_wait_id = blockers.open_set_holding(session, row.id)
        acked = with_ack(runtime, result, wake_id=row.id, now=now, task_wait_id=task_wait_id)
        return per_channel(runtime, acked)

    finish(self.app, runtime, escalation_id, State.DECIDED, decide, inline=SEND_HERE)


def stop_waiting_pages(
    session: Session, row: Escalation, deliveries: Sequence[Delivery], *, now: datetime
) -> None:
    """A decided case's pages still waiting (chain levels, pages held for working hours)
    will ask nobody: cancelled, in one event."""
    waiting = [d for d in deliveries if d.purpose in PAGES and d.state == DeliveryState.WAITING]
    stop_pages(session, row, waiting, {"why": "decided"}, now=now)


@shared_task(name=names.DELIVER, bind=True)
def deliver(self: Any, escalation_id: str) -> None:
    """Send every due outbox row of a case; each claimed first, so a repeat sends nothing."""
    deliver_due(self.app, runtime_for(self.app), escalation_id)


@shared_task(name=names.ACK_WAKE, bind=True)
def ack_wake(self: Any, wake_id: str, token: str) -> bool:
    """A woken run's acknowledgement, by task name: True the first time it is recorded."""
    return bool(
        acknowledge(runtime_for(self.app), wake_id, via=ResumedVia.ACK, token=token)["first"]
    )


@shared_task(name=names.SWEEP, bind=True)
def sweep(self: Any) -> dict[str, int]:
    """Beat's one job: dispatch what is due and re-drive what stalled. Safe to run twice."""
    runtime = runtime_for(self.app)
    settings = runtime.settings
    now = datetime.now(UTC)
    stall_after = timedelta(seconds=settings.stall_after)
    dispatched: list[tuple[Stage, str]] = []
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
        due = due_deliveries(session, now=now, pending_grace=stall_after, limit=500)
        wanted = {d.escalation_id for d in due}
        # A row nudged now is not nudged again until it looks lost once more: with a
        # backed-up queue, every sweep would otherwise add another message for it. A failed
        # row due for its retry becomes pending (queued to send), under the same grace.
        stamped = (DeliveryState.PENDING, DeliveryState.FAILED)
        session.execute(
            update(Delivery)
            .where(
                col(Delivery.id).in_([d.id for d in due if d.state in stamped]),
                col(Delivery.state).in_(stamped),
                col(Delivery.next_attempt_at) <= now,
            )
            .values(state=DeliveryState.PENDING, next_attempt_at=now)
            .execution_options(synchronize_session=False)  # the rows read above are not reused
        )
    wanted.update(blockers.release_ready(runtime))  # SPEC §8: once, after the last
    wanted.update(redeliver_due(runtime, now=now))  # wakes nobody acknowledged
    for stage, escalation_id in dispatched:
        nudge(self.app, stage, escalation_id)
    for escalation_id in sorted(wanted):
        nudge(self.app, Stage.DELIVER, escalation_id)
    return {"stages": len(dispatched), "deliveries": len(wanted)}
