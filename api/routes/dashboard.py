"""The operators' dashboard: open cases as cards with their advisory, answered after a confirm."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlmodel import col, select

from api.deps import (
    DashboardAction,
    DashboardSession,
    DbDep,
    RuntimeDep,
    SessionCookie,
    SignInsDep,
    same_site,
)
from api.limits import LABEL_LIMIT, REPLY_LIMIT
from api.pages import page
from api.routes.links import second_confirmation
from api.sessions import COOKIE, SESSION_AGE
from api.statuses import status_of
from models.store import as_utc, case_of, decision_json, decision_of, design_of, iso
from models.tables import Escalation, Event, Reply
from workers.answers import answer, dangers_of
from workers.recovery import retry
from workflows.advisory import advisory, prompt_form
from workflows.errors import Conflict, DesignError, NotFound
from workflows.judgement import ReplyOutcome
from workflows.routing import route_facts
from workflows.states import TERMINAL, State

router = APIRouter(include_in_schema=False)

SEVERITY_RANK = {"critical": 0, "high": 1, "medium": 2, "low": 3}
RECENT = 20
LOGIN = "/dashboard/login"
Option = Annotated[str, Query(max_length=LABEL_LIMIT)]
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _card(row: Escalation) -> dict[str, Any]:
    """What one case shows: advisory, prompt form with answer links, deadline, decision."""
    case = case_of(row)
    card: dict[str, Any] = {
        "id": row.id,
        "run_id": row.run_id,
        "severity": row.severity,
        "state": row.state,
        "outcome": row.outcome,
        "created_at": iso(row.created_at),
        "closed_at": iso(row.closed_at),
        "question": (row.packet or {}).get("requested_action"),
        "problems": row.problems,
        "open": State(row.state) not in TERMINAL,
    }
    if not row.design or not row.packet:  # refused: nothing was routed, nothing to answer
        return card
    try:
        design = design_of(row)
    except DesignError as broken:  # a parked case may be parked for exactly this: show it
        return {**card, "problems": [*card["problems"], str(broken)]}
    facts = route_facts(design, case)
    routed = as_utc(row.routed_at)
    form = prompt_form(
        case,
        timeout_action=facts.timeout_action,
        deadline=routed + facts.timeout if routed else None,
    )

    def link(label: str) -> str:  # a confirm page behind the session, not a bearer link
        return f"/dashboard/cases/{row.id}/answer?{urlencode({'option': label})}"

    card.update(
        advisory=advisory(case),
        form=form,
        links={option.label: link(option.label) for option in case.options},
        options=case.options,
        note=(row.pipeline or {}).get("note"),
    )
    return card


@router.get("/dashboard/login")
def login_page() -> HTMLResponse:
    return page("dashboard_login.html")


@router.post("/dashboard/login")
def login(
    sign_ins: SignInsDep,
    runtime: RuntimeDep,
    token: Annotated[str, Form(max_length=REPLY_LIMIT)],
    name: Annotated[str, Form(max_length=REPLY_LIMIT)] = "",
) -> Response:
    # The name is the operator's word, like the CLI's --sender: kept beside the role.
    cookie = sign_ins.open(token.strip(), name)
    if cookie is None:
        problem = "That token is not an operator or admin token of this service."
        return page("dashboard_login.html", 401, problem=problem)
    response = RedirectResponse("/dashboard", status_code=303)
    response.set_cookie(
        COOKIE,
        cookie,
        max_age=int(SESSION_AGE.total_seconds()),
        httponly=True,
        samesite="strict",
        secure=runtime.settings.resolved_public_url.startswith("https://"),
    )
    return response


@router.post("/dashboard/logout")
def logout(
    request: Request, runtime: RuntimeDep, sign_ins: SignInsDep, cookie: SessionCookie
) -> Response:
    """Sign-out ends the session on the server: a copy of the cookie decides nothing after."""
    if not same_site(request, runtime):
        message = "Sign out from this service's own dashboard."
        return page("answer.html", 403, title="Not signed out", message=message)
    sign_ins.close(cookie)
    response = RedirectResponse(LOGIN, status_code=303)
    response.delete_cookie(COOKIE, httponly=True, samesite="strict")
    return response


@router.get("/dashboard")
def overview(operator: DashboardSession, db: DbDep) -> Response:
    terminal = [state.value for state in TERMINAL]
    ended = [State.CLOSED.value, State.REFUSED.value]
    open_rows = db.exec(select(Escalation).where(col(Escalation.state).not_in(terminal))).all()
    parked_rows = db.exec(
        select(Escalation)
        .where(Escalation.state == State.DEAD_LETTER.value)
        .order_by(col(Escalation.updated_at).desc())
    ).all()
    closed_rows = db.exec(
        select(Escalation)
        .where(col(Escalation.state).in_(ended))
        .order_by(col(Escalation.closed_at).desc())
        .limit(RECENT)
    ).all()
    open_rows = sorted(
        open_rows,
        key=lambda r: (SEVERITY_RANK.get(r.severity, 9), as_utc(r.created_at) or _EPOCH),
    )
    return page(
        "dashboard.html",
        role=operator.who,
        open_cards=[_card(r) for r in open_rows],
        parked_cards=[_card(r) for r in parked_rows],
        closed_cards=[_card(r) for r in closed_rows],
        now=datetime.now(UTC).isoformat(timespec="seconds"),
    )


@router.get("/dashboard/cases/{escalation_id}/answer")
def confirm_answer(
    escalation_id: str, option: Option, operator: DashboardSession, db: DbDep
) -> Response:
    """Every answer is confirmed first; a destructive one shows its warning here."""
    row = db.get(Escalation, escalation_id)
    if row is None:
        return page("answer.html", 404, title="No such case", message=escalation_id)
    described = {o.label: o for o in case_of(row).options}.get(option)
    return page(
        "answer.html",
        title="Confirm your answer",
        message=f"Answer this case with “{option}”?",
        question=(row.packet or {}).get("requested_action"),
        description=described.description if described else None,
        danger=dangers_of(db, row).get(option),
        option=option,
        confirm=True,
        case_id=escalation_id,
    )


@router.post("/dashboard/cases/{escalation_id}/answer")
def post_answer(
    escalation_id: str,
    option: Option,
    operator: DashboardAction,
    runtime: RuntimeDep,
    confirmed: Annotated[str | None, Form(max_length=LABEL_LIMIT)] = None,
) -> Response:
    """Decides; a destructive option only from its second confirmation (`confirmed`)."""
    try:
        result = answer(
            runtime, escalation_id, option=option, responder=f"dashboard:{operator.who}",
            channel="dashboard", confirmed=confirmed == option,
        )  # fmt: skip
    except NotFound as missing:
        return page("answer.html", 404, title="No such case", message=str(missing))
    if result.outcome == ReplyOutcome.NEEDS_CONFIRMATION:
        return second_confirmation(option, result.message, escalation_id)
    title = "Decided" if result.decided else "Not decided"
    return page(
        "answer.html", status_of(result), title=title, message=result.message,
        case_id=escalation_id, back=f"/dashboard/cases/{escalation_id}",
    )  # fmt: skip


@router.post("/dashboard/cases/{escalation_id}/retry")
def retry_parked(escalation_id: str, operator: DashboardAction, runtime: RuntimeDep) -> Response:
    """A parked case back to work. The cookie is SameSite=Strict, and a cross-site
    Origin is refused as well, so another site cannot make a signed-in browser post."""
    try:
        retry(runtime, escalation_id, by=f"dashboard:{operator.who}")
    except (Conflict, NotFound) as refused:
        return page("dashboard_case.html", 409, problem=str(refused), role=operator.who)
    return RedirectResponse(f"/dashboard/cases/{escalation_id}", status_code=303)


@router.get("/dashboard/cases/{escalation_id}")
def case_page(escalation_id: str, operator: DashboardSession, db: DbDep) -> Response:
    row = db.get(Escalation, escalation_id)
    if row is None:
        return page("dashboard_case.html", 404, missing=escalation_id, role=operator.who)
    decision = decision_of(db, row.id)
    events = db.exec(select(Event).where(Event.escalation_id == row.id).order_by(col(Event.id)))
    replies = db.exec(select(Reply).where(Reply.escalation_id == row.id).order_by(col(Reply.id)))
    return page(
        "dashboard_case.html",
        role=operator.who,
        card=_card(row),
        packet=row.packet or {},
        decision=decision_json(decision) if decision else None,
        events=[(iso(e.at), e.kind, e.detail) for e in events],
        replies=[(iso(r.at), r.sender, r.raw_text, r.outcome) for r in replies],
    )
