"""The operators' console: the queue due-first, case pages, confirmed answers, free-text replies."""

from __future__ import annotations

from contextlib import suppress
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy import false, func
from sqlmodel import Session as DbSession
from sqlmodel import col, select

from api.console_cards import Answerable, card, deadline_of, timed
from api.deps import (
    DashboardAction,
    DashboardSession,
    DbDep,
    RuntimeDep,
    SessionCookie,
    SignInsDep,
    same_site,
)
from api.metrics import figures, insight_rows
from api.pages import page
from api.sessions import COOKIE, SESSION_AGE
from models.sql import one_of
from models.store import as_utc, decision_of, design_of
from models.tables import Decision, Escalation, Event, Reply
from workers.acknowledgements import acknowledge
from workers.answers import answer, reply_context
from workers.extensions import extend_deadline
from workers.reassignment import reassign
from workers.recovery import retry
from workflows.console import (
    PAGE_SIZE,
    SEVERITIES,
    due_key,
    page_title,
    severity_counts,
    timeline_sentence,
    understood_words,
)
from workflows.errors import Conflict, DesignError, InvalidInput, NotFound
from workflows.identities import Responder
from workflows.judgement import ReplyOutcome, answers_now, understand
from workflows.limits import LABEL_LIMIT, REPLY_LIMIT
from workflows.secrets import scan_text
from workflows.states import OPEN, TERMINAL, State

router = APIRouter(include_in_schema=False)
CONSOLE_JS = Path(__file__).resolve().parents[1] / "static" / "console.js"

RECENT = 20
ENDED = {state.value for state in TERMINAL}
LOGIN = "/dashboard/login"
Option = Annotated[str, Query(max_length=LABEL_LIMIT)]
Field = Annotated[str, Query(max_length=LABEL_LIMIT)]


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


@dataclass(frozen=True)
class QueueFilter:
    """What the operator narrowed the queue to; empty fields do not narrow."""

    severity: str = ""
    state: str = ""
    run: str = ""
    trigger: str = ""
    recipient: str = ""
    q: str = ""

    @property
    def narrowed(self) -> bool:
        return any(asdict(self).values())

    def query(self, page: int) -> str:
        kept = {k: v for k, v in asdict(self).items() if v}
        return urlencode({**kept, **({"page": page} if page > 1 else {})})


def _due(row: Escalation, now: datetime) -> tuple[int, Any, datetime]:
    deadline = None
    if row.design and row.packet:
        with suppress(DesignError):  # a broken design shows on the card; sort it last
            deadline = deadline_of(row, design_of(row))[1]
    return due_key(row.severity, deadline, as_utc(row.created_at), now=now)


def _due_first(db: DbSession, statement: Any, now: datetime) -> list[str]:
    """The ids due first, from columns alone; only the page shown is read in full. Reading
    every open case's packet and design to sort them was most of the page's time
    (docs/PERFORMANCE.md). A tier's timeout is parsed once per stored design version."""
    light = statement.with_only_columns(
        col(Escalation.id),
        col(Escalation.severity),
        col(Escalation.routed_at),
        col(Escalation.extended_seconds),
        col(Escalation.created_at),
        col(Escalation.design_hash),
    )
    designs: dict[str | None, Any] = {}

    def design(digest: str | None) -> Any:
        if digest not in designs:
            designs[digest] = None
            # One of the listed cases holds it: looked for among them (the state index), not
            # through every case ever stored, which has no index on the hash.
            one = statement.where(Escalation.design_hash == digest).limit(1)
            row = db.exec(one).first() if digest else None
            if row is not None and row.design:
                with suppress(DesignError):  # a broken design shows on the card; sort it last
                    designs[digest] = design_of(row)
        return designs[digest]

    keyed = []
    for case_id, severity, routed_at, extended, created_at, digest in db.execute(light).all():
        found, deadline = design(digest), None
        if found is not None and routed_at is not None:
            with suppress(DesignError, KeyError, ValueError):
                timeout = found.tier(severity).timeout + timedelta(seconds=extended or 0)
                deadline = as_utc(routed_at) + timeout  # as console_cards.deadline_of
        keyed.append((due_key(severity, deadline, as_utc(created_at), now=now), case_id))
    keyed.sort()
    return [case_id for _key, case_id in keyed]


def _matches(row: Escalation, wanted: QueueFilter) -> bool:
    """The text search and the recipient, which live in the packet (JSON), not in columns."""
    packet = row.packet or {}
    if wanted.q:
        haystack = f"{packet.get('requested_action', '')} {row.run_id}".casefold()
        if wanted.q.casefold() not in haystack:
            return False
    if wanted.recipient:
        tier = ""
        if row.design and row.packet:
            try:
                tier = design_of(row).tier(row.severity).recipient.primary
            except (DesignError, KeyError, ValueError):
                tier = ""
        if wanted.recipient not in (packet.get("recipient"), tier):
            return False
    return True


def _attempt_events(db: DbSession, ids: list[str]) -> dict[str, list[Any]]:
    """Each case's delivery attempts, in order, for the cards' "last two attempts"."""
    found: dict[str, list[Any]] = {i: [] for i in ids}
    if not ids:
        return found
    rows = db.exec(
        select(Event)
        .where(
            col(Event.escalation_id).in_(ids),
            col(Event.kind).in_(["delivery_attempt", "acknowledged"]),
        )
        .order_by(col(Event.id))
    )
    for event in rows:
        found[event.escalation_id].append(event)
    return found


def _decisions(db: DbSession, ids: list[str]) -> dict[str, Decision]:
    if not ids:
        return {}
    rows = db.exec(select(Decision).where(col(Decision.escalation_id).in_(ids)))
    return {d.escalation_id: d for d in rows}


def _cards(db: DbSession, rows: list[Escalation], now: datetime) -> list[dict[str, Any]]:
    ids = [r.id for r in rows]
    attempts, decisions = _attempt_events(db, ids), _decisions(db, ids)
    return [
        card(r, now=now, decision=decisions.get(r.id), events=timed(attempts[r.id])) for r in rows
    ]


PageNumber = Annotated[int, Query(alias="page", ge=1, le=10_000)]


def queue_filter(
    severity: Field = "",
    state: Field = "",
    run: Field = "",
    trigger: Field = "",
    recipient: Field = "",
    q: Field = "",
) -> QueueFilter:
    return QueueFilter(severity, state, run, trigger, recipient, q.strip())


WantedDep = Annotated[QueueFilter, Depends(queue_filter)]


def _queue(db: DbSession, wanted: QueueFilter, page_number: int) -> dict[str, Any]:
    """The queue's values: what is due first, narrowed by the filters, one page of 50."""
    now = datetime.now(UTC)
    statement = select(Escalation)
    if wanted.state in {s.value for s in State}:
        statement = statement.where(Escalation.state == wanted.state)
    elif wanted.state:
        statement = statement.where(false())
    else:
        # open states listed, not the ended ones excluded: a list an index can serve
        statement = statement.where(one_of(col(Escalation.state), OPEN))
    for column, value in (
        (Escalation.severity, wanted.severity),
        (Escalation.run_id, wanted.run),
        (Escalation.trigger_type, wanted.trigger),
    ):
        if value:
            statement = statement.where(column == value)
    first = (page_number - 1) * PAGE_SIZE
    if wanted.q or wanted.recipient:  # these read the packet: every row in full
        rows = [r for r in db.exec(statement).all() if _matches(r, wanted)]
        rows.sort(key=lambda r: _due(r, now))
        ids = [r.id for r in rows]
        found, shown_ids = len(ids), ids[first : first + PAGE_SIZE]
    elif wanted.state in ENDED:
        # Nothing is due on an ended case, and a service holds years of them: the latest
        # first, one page read (the state and update-time index), counted in SQL.
        found = db.exec(select(func.count()).select_from(statement.subquery())).one()
        latest = statement.with_only_columns(col(Escalation.id)).order_by(
            col(Escalation.updated_at).desc(), col(Escalation.id)
        )
        shown_ids = list(db.execute(latest.offset(first).limit(PAGE_SIZE)).scalars())
    else:
        ids = _due_first(db, statement, now)
        found, shown_ids = len(ids), ids[first : first + PAGE_SIZE]
    pages = max(1, -(-found // PAGE_SIZE))
    loaded = {r.id: r for r in db.exec(select(Escalation).where(col(Escalation.id).in_(shown_ids)))}
    shown = [loaded[i] for i in shown_ids if i in loaded]
    open_severities = db.exec(
        select(Escalation.severity).where(one_of(col(Escalation.state), OPEN))
    ).all()
    return {
        "title": page_title(len(open_severities)),
        "counts": severity_counts(open_severities),
        "open_total": len(open_severities),
        "wanted": wanted,
        "found": found,
        "page_number": page_number,
        "pages": pages,
        "prev_query": wanted.query(page_number - 1) if page_number > 1 else None,
        "next_query": wanted.query(page_number + 1) if page_number < pages else None,
        "cards": _cards(db, shown, now),
        "now": now,
    }


def _latest_ended(db: DbSession, states: tuple[State, ...]) -> list[Escalation]:
    """The RECENT latest ended of these states: each state read from the end of its own part
    of the (state, closed_at) index, then merged (one statement over both states sorted
    every closed case on SQLite)."""
    found = [
        row
        for state in states
        for row in db.exec(
            select(Escalation)
            .where(one_of(col(Escalation.state), [state]), col(Escalation.closed_at).is_not(None))
            .order_by(col(Escalation.closed_at).desc())
            .limit(RECENT)
        ).all()
    ]
    found.sort(
        key=lambda row: as_utc(row.closed_at) or datetime.min.replace(tzinfo=UTC), reverse=True
    )
    return found[:RECENT]


@router.get("/dashboard")
def overview(
    operator: DashboardSession, db: DbDep, wanted: WantedDep, page_number: PageNumber = 1
) -> Response:
    """The queue page; its script keeps the queue live from /dashboard/queue."""
    now = datetime.now(UTC)
    parked_rows: list[Escalation] = []
    closed_rows: list[Escalation] = []
    if not wanted.narrowed and page_number == 1:
        parked_rows = list(
            db.exec(
                select(Escalation)
                .where(Escalation.state == State.DEAD_LETTER.value)
                .order_by(col(Escalation.updated_at).desc())
                .limit(RECENT)
            ).all()
        )
        closed_rows = _latest_ended(db, (State.CLOSED, State.REFUSED))
    return page(
        "dashboard.html",
        role=operator.who,
        **_queue(db, wanted, page_number),
        live_query=wanted.query(page_number),
        states=[s.value for s in State],
        severities=SEVERITIES,
        parked_cards=_cards(db, parked_rows, now),
        closed_cards=_cards(db, closed_rows, now),
    )


@router.get("/dashboard/queue")
def queue_fragment(
    operator: DashboardSession, db: DbDep, wanted: WantedDep, page_number: PageNumber = 1
) -> Response:
    """The queue's cards, counts and title as a fragment: what the page's script polls."""
    return page("dashboard_queue.html", **_queue(db, wanted, page_number))


@router.get("/dashboard/insights")
def insights_page(operator: DashboardSession, db: DbDep) -> Response:
    """How decisions go: time to decision per tier and channel, defaults, repeats."""
    return page(
        "dashboard_insights.html", role=operator.who, title="Insights — escalations",
        **insight_rows(figures(db)),
    )  # fmt: skip


@router.get("/dashboard/static/console.js")
def console_script() -> Response:
    """The console's one script, from this origin (the pages' CSP allows only 'self')."""
    return Response(CONSOLE_JS.read_bytes(), media_type="text/javascript")


RESULT_WORDS: dict[str, str] = {
    "acknowledged": "Acknowledged: the timeline says you have it.",
    "extended": "Extended: the default waits longer.",
    "reassigned": "Reassigned: the new tier is paged; its window starts now.",
    ReplyOutcome.DECIDED: "Decided. The run is being told.",
    ReplyOutcome.SUPERSEDED: "Not decided: the case had been decided already.",
    ReplyOutcome.TOO_EARLY: "Not decided: the case is still being routed; try again in a moment.",
    ReplyOutcome.NOT_ALLOWED: "Not decided: the design's responder policy does not allow you.",
    ReplyOutcome.OVER_CAP: "Not decided: that command's cap is spent.",
    ReplyOutcome.UNKNOWN_OPTION: "Not decided: that is not one of the case's answers.",
    ReplyOutcome.WITHHELD: "Not recorded: the reply contained a secret.",
    ReplyOutcome.NEEDS_CONFIRMATION: "Recorded, not decided: that answer needs CONFIRM.",
    ReplyOutcome.AMBIGUOUS: "Recorded, not decided: the reply fits more than one answer.",
    ReplyOutcome.COMMENT: "Recorded as a comment; nothing was decided.",
    ReplyOutcome.DUPLICATE: "Already received.",
}


def _offered(db: DbSession, row: Escalation, option: str) -> Answerable | str | None:
    """The answer a confirm page may offer, or why none: a closed case, an unknown option."""
    shown = card(row, now=datetime.now(UTC), decision=decision_of(db, row.id))
    if not shown["answerable"]:
        return shown["closed"] or f"This case is {shown['state_words']}: nothing to answer."
    return next((a for a in shown["answers"] if a.label == option), None)


@router.get("/dashboard/cases/{escalation_id}/answer")
def confirm_answer(
    escalation_id: str, option: Option, operator: DashboardSession, db: DbDep
) -> Response:
    """Every answer is confirmed first; a destructive one in red, with an explicit tick."""
    row = db.get(Escalation, escalation_id)
    if row is None:
        return page("dashboard_case.html", 404, missing=escalation_id, role=operator.who)
    offered = _offered(db, row, option)
    shown = card(row, now=datetime.now(UTC))
    if not isinstance(offered, Answerable):
        why = offered or f"“{option}” is not one of this case's answers."
        return page(
            "dashboard_confirm.html", 404 if offered is None else 409, role=operator.who,
            card=shown, problem=why, title="Nothing to confirm",
        )  # fmt: skip
    return page(
        "dashboard_confirm.html", role=operator.who, card=shown, answer=offered,
        title=f"Confirm “{option}”",
    )  # fmt: skip


@router.post("/dashboard/cases/{escalation_id}/answer")
def post_answer(
    escalation_id: str,
    option: Option,
    operator: DashboardAction,
    runtime: RuntimeDep,
    db: DbDep,
    confirm: Annotated[str, Form(max_length=LABEL_LIMIT)] = "",
) -> Response:
    """Decide, then redirect (POST-redirect-GET: a reload re-sends nothing)."""
    row = db.get(Escalation, escalation_id)
    if row is None:
        return page("dashboard_case.html", 404, missing=escalation_id, role=operator.who)
    offered = _offered(db, row, option)
    if isinstance(offered, Answerable) and offered.destructive and confirm != offered.label:
        return RedirectResponse(offered.href, status_code=303)  # not ticked: ask again
    db.close()  # end the read before answer() takes the write lock (SQLite: one writer)
    try:
        result = answer(
            runtime, escalation_id, option=option, channel="dashboard",
            responder=Responder(operator.identity, verified=True, note=operator.name or None),
        )  # fmt: skip
    except NotFound:
        return page("dashboard_case.html", 404, missing=escalation_id, role=operator.who)
    return _to_case(escalation_id, result.outcome)


def _to_case(escalation_id: str, outcome: str) -> Response:
    target = f"/dashboard/cases/{escalation_id}?{urlencode({'result': str(outcome)})}"
    return RedirectResponse(target, status_code=303)


Text = Annotated[str, Form(max_length=REPLY_LIMIT)]


@router.post("/dashboard/cases/{escalation_id}/reply/preview")
def preview_reply(escalation_id: str, text: Text, operator: DashboardAction, db: DbDep) -> Response:
    """What the reply grammar understood of a free-text reply; nothing is recorded or sent."""
    row = db.get(Escalation, escalation_id)
    if row is None or not row.design:
        return page("dashboard_case.html", 404, missing=escalation_id, role=operator.who)
    shown = card(row, now=datetime.now(UTC), decision=decision_of(db, row.id))
    context = reply_context(row, design_of(row))
    secrets = scan_text(text)
    match = None if secrets else understand(context, None, text)
    return page(
        "dashboard_preview.html", role=operator.who, card=shown, text=text,
        understood=understood_words(match, answers_now(context), secrets=secrets),
        sendable=bool(shown["answerable"] and not secrets),
        title="What your reply says",
    )  # fmt: skip


@router.post("/dashboard/cases/{escalation_id}/reply")
def send_reply(
    escalation_id: str, text: Text, operator: DashboardAction, runtime: RuntimeDep
) -> Response:
    """A free-text reply, judged by the reply grammar like one from chat."""
    try:
        result = answer(
            runtime, escalation_id, text=text, channel="dashboard",
            responder=Responder(operator.identity, verified=True, note=operator.name or None),
        )  # fmt: skip
    except NotFound:
        return page("dashboard_case.html", 404, missing=escalation_id, role=operator.who)
    return _to_case(escalation_id, result.outcome)


@router.post("/dashboard/cases/{escalation_id}/acknowledge")
def acknowledge_case(
    escalation_id: str,
    operator: DashboardAction,
    runtime: RuntimeDep,
    reason: Annotated[str, Form(max_length=REPLY_LIMIT)] = "",
) -> Response:
    """ "I have it": who and why on the timeline and the card; nothing is decided."""
    try:
        acknowledge(runtime, escalation_id, by=operator.identity, reason=reason)
    except (Conflict, NotFound, InvalidInput) as refused:
        return page("dashboard_case.html", 409, problem=str(refused), role=operator.who)
    return _to_case(escalation_id, "acknowledged")


@router.post("/dashboard/cases/{escalation_id}/extend")
def extend_case(
    escalation_id: str,
    operator: DashboardAction,
    runtime: RuntimeDep,
    minutes: Annotated[int, Form(ge=1, le=1440)],
    reason: Annotated[str, Form(max_length=REPLY_LIMIT)] = "",
) -> Response:
    """More time before the default: minutes added to the deadline, with who and why."""
    try:
        extend_deadline(
            runtime, escalation_id, minutes=minutes, by=operator.identity, reason=reason
        )
    except (Conflict, NotFound, InvalidInput) as refused:
        return page("dashboard_case.html", 409, problem=str(refused), role=operator.who)
    return _to_case(escalation_id, "extended")


@router.post("/dashboard/cases/{escalation_id}/reassign")
def reassign_case(
    escalation_id: str,
    operator: DashboardAction,
    runtime: RuntimeDep,
    tier: Annotated[str, Form(max_length=16)],
    reason: Annotated[str, Form(max_length=REPLY_LIMIT)] = "",
) -> Response:
    """To another tier: its recipient paged, its clock from now, with who and why."""
    try:
        reassign(runtime, escalation_id, to=tier, by=operator.identity, reason=reason)
    except (Conflict, NotFound, InvalidInput) as refused:
        return page("dashboard_case.html", 409, problem=str(refused), role=operator.who)
    return _to_case(escalation_id, "reassigned")


@router.post("/dashboard/cases/{escalation_id}/retry")
def retry_parked(escalation_id: str, operator: DashboardAction, runtime: RuntimeDep) -> Response:
    """A parked case back to work. The cookie is SameSite=Strict, and a cross-site
    Origin is refused as well, so another site cannot make a signed-in browser post."""
    try:
        retry(runtime, escalation_id, by=operator.identity)
    except (Conflict, NotFound) as refused:
        return page("dashboard_case.html", 409, problem=str(refused), role=operator.who)
    return RedirectResponse(f"/dashboard/cases/{escalation_id}", status_code=303)


@router.get("/dashboard/cases/{escalation_id}")
def case_page(
    escalation_id: str,
    operator: DashboardSession,
    db: DbDep,
    result: Annotated[str, Query(max_length=LABEL_LIMIT)] = "",
) -> Response:
    row = db.get(Escalation, escalation_id)
    if row is None:
        return page("dashboard_case.html", 404, missing=escalation_id, role=operator.who)
    now = datetime.now(UTC)
    decision = decision_of(db, row.id)
    events = timed(
        list(db.exec(select(Event).where(Event.escalation_id == row.id).order_by(col(Event.id))))
    )
    replies = db.exec(select(Reply).where(Reply.escalation_id == row.id).order_by(col(Reply.id)))
    said = RESULT_WORDS.get(result)
    return page(
        "dashboard_case.html",
        role=operator.who,
        card=card(row, now=now, decision=decision, events=events),
        title=f"Case {row.id}",
        said=said,
        tiers=SEVERITIES,
        packet=row.packet or {},
        timeline=[(timeline_sentence(at, kind, detail), detail) for at, kind, detail in events],
        replies=[(as_utc(r.at), r.sender, r.raw_text, r.outcome) for r in replies],
    )
