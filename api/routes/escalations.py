"""The agents' and operators' API: raise, read, wait for, answer and retry escalations."""

from __future__ import annotations

import asyncio
import time
from typing import Annotated

from fastapi import APIRouter, Body, Query, Response, status
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import func
from sqlmodel import Session, col, select

from api.deps import (
    CurrentAgent,
    CurrentOperator,
    CurrentRole,
    DbDep,
    OperatorHolder,
    RuntimeDep,
)
from api.schemas import (
    AnswerPublic,
    CaseHistory,
    EscalationAccepted,
    EscalationPublic,
    EscalationSummary,
    EscalationWait,
    ReplyCreate,
    Retried,
    Stats,
)
from api.statuses import outcome_answers, status_of
from api.views import (
    answer_accepted,
    answer_public,
    escalation_detail,
    escalation_summary,
    event_public,
    reply_public,
)
from models.sql import one_of
from models.store import decision_of, deliveries_of, iso, oldest_open_at, reasons_for
from models.tables import Delivery, Escalation, Event, Reply
from workers.answers import answer
from workers.intake import accept
from workers.recovery import retry
from workers.runtime import Runtime
from workers.wake_acks import not_resumed_ids
from workflows.errors import InvalidInput, NotFound
from workflows.identities import Responder
from workflows.limits import ID_LIMIT
from workflows.states import OPEN, TERMINAL, State

router = APIRouter()

WAIT_POLL = 0.25  # seconds between SQL reads while a long-poll holds
PARKED_LISTED = 20
DONE = (State.CLOSED.value, State.REFUSED.value, State.DEAD_LETTER.value)
Filter = Annotated[str | None, Query(max_length=ID_LIMIT)]


@router.post(
    "/v1/escalations",
    status_code=status.HTTP_201_CREATED,
    responses={200: {"model": EscalationAccepted, "description": "a resend, or a join"}},
)
def raise_escalation(
    runtime: RuntimeDep,
    response: Response,
    # Checked by our own rules (fixed error texts, SPEC §1); models.packet documents it.
    request: Annotated[object, Body(description="{packet, snapshot?, options?, wake?, owner?}")],
    _role: CurrentAgent,
) -> EscalationAccepted:
    accepted = accept(runtime, request)
    public_url = runtime.settings.resolved_public_url
    return answer_accepted(runtime, accepted, response, public_url=public_url)


@router.get("/v1/escalations")
def list_escalations(
    db: DbDep,
    _role: CurrentRole,
    state: Annotated[State | None, Query()] = None,  # an enum column: '' would be a 500
    severity: Filter = None,
    run: Filter = None,
    open: Annotated[bool, Query()] = False,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> list[EscalationSummary]:
    """Newest first (the created-at index: a service holds years of cases); `open` keeps
    the cases not yet closed, refused or parked."""
    statement = select(Escalation).order_by(col(Escalation.created_at).desc()).limit(limit)
    if open:
        statement = statement.where(one_of(col(Escalation.state), OPEN))
    if state is not None:  # an enum member: written in, so a generic plan still sees it
        statement = statement.where(one_of(col(Escalation.state), [state]))
    for column, value in (
        (Escalation.severity, severity),
        (Escalation.run_id, run),
    ):
        if value is not None:
            statement = statement.where(column == value)
    return [escalation_summary(row) for row in db.exec(statement)]


def _row(db: Session, escalation_id: str) -> Escalation:
    row = db.get(Escalation, escalation_id)
    if row is None:
        raise NotFound(f"no escalation {escalation_id}")
    return row


def read_detail(runtime: Runtime, escalation_id: str) -> EscalationPublic:
    """The case as the API shows it; NotFound when there is none."""
    with Session(runtime.engine) as db:
        row = _row(db, escalation_id)
        deliveries = deliveries_of(db, row.id)
        decision = decision_of(db, row.id)
        return escalation_detail(row, decision, list(deliveries), reasons_for(db, row.id))


@router.get("/v1/escalations/{escalation_id}")
def get_escalation(escalation_id: str, runtime: RuntimeDep, _role: CurrentRole) -> EscalationPublic:
    return read_detail(runtime, escalation_id)


@router.get("/v1/escalations/{escalation_id}/wait")
async def wait_for_escalation(
    escalation_id: str,
    runtime: RuntimeDep,
    _role: CurrentRole,
    hold: Annotated[
        float, Query(ge=0, le=45, description="seconds to hold (under MCP's 60 s)")
    ] = 25,
) -> EscalationWait:
    """Long-poll: answer as soon as the case is closed (or refused/parked), else after
    `hold` seconds with its current state, so a tool call that times out can wait again."""
    deadline = time.monotonic() + hold
    while True:
        detail = await run_in_threadpool(read_detail, runtime, escalation_id)
        done = detail.state in DONE
        if done or time.monotonic() >= deadline:
            return EscalationWait(**detail.model_dump(), waiting=not done)
        await asyncio.sleep(min(WAIT_POLL, max(0.0, deadline - time.monotonic())))


@router.get("/v1/escalations/{escalation_id}/events")
def get_events(escalation_id: str, db: DbDep, _role: CurrentRole) -> CaseHistory:
    row = _row(db, escalation_id)
    events = db.exec(select(Event).where(Event.escalation_id == row.id).order_by(col(Event.id)))
    replies = db.exec(select(Reply).where(Reply.escalation_id == row.id).order_by(col(Reply.id)))
    return CaseHistory(
        id=row.id,
        events=[event_public(e) for e in events],
        replies=[reply_public(r) for r in replies],
    )


@router.post("/v1/escalations/{escalation_id}/replies", responses=outcome_answers(AnswerPublic))
def post_reply(
    escalation_id: str,
    body: ReplyCreate,
    runtime: RuntimeDep,
    response: Response,
    holder: OperatorHolder,
) -> AnswerPublic:
    """Answer with `{"option": LABEL}` or `{"text": REPLY}`; the status says what became of it.

    The answer is from the token's holder (api:NAME for a token bound to a name, else
    api:ROLE); a `sender` the caller adds is recorded as a note and decides nothing."""
    if body.option is None and not (body.text or "").strip():
        raise InvalidInput('send {"option": LABEL} or {"text": REPLY}')
    responder = Responder(f"api:{holder.identity}", verified=True, note=body.sender or None)
    result = answer(
        runtime,
        escalation_id,
        option=body.option,
        text=body.text,
        responder=responder,
        channel="api",
    )
    response.status_code = status_of(result)
    return answer_public(result)


@router.post("/v1/escalations/{escalation_id}/retry")
def retry_parked(escalation_id: str, runtime: RuntimeDep, role: CurrentOperator) -> Retried:
    """A dead-lettered case goes back to the stage it failed in, attempts reset."""
    into = retry(runtime, escalation_id, by=f"api:{role}")
    return Retried(id=escalation_id, state=into.value, retried=True)


@router.get("/v1/stats")
def stats(db: DbDep, _role: CurrentRole) -> Stats:
    """Cases by state, the oldest open one, parked cases, deliveries by state, and cases
    decided but not resumed (their run never acknowledged the wake)."""
    terminal = [state.value for state in TERMINAL]
    by_state = dict(
        db.exec(select(Escalation.state, func.count()).group_by(Escalation.state)).all()
    )
    oldest = oldest_open_at(db)
    parked = db.exec(
        select(Escalation.id)
        .where(Escalation.state == State.DEAD_LETTER.value)
        .order_by(col(Escalation.updated_at).desc())
        .limit(PARKED_LISTED)
    ).all()
    deliveries = dict(db.exec(select(Delivery.state, func.count()).group_by(Delivery.state)).all())
    return Stats(
        open=sum(n for state, n in by_state.items() if state not in terminal),
        by_state=by_state,
        oldest_open_at=iso(oldest),
        dead_letter=list(parked),
        deliveries=deliveries,
        decided_not_resumed=not_resumed_ids(db, limit=PARKED_LISTED),
    )
