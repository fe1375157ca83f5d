"""One-click answer links: a GET only asks, a POST from the confirm page decides."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form
from fastapi.responses import HTMLResponse

from api.deps import RuntimeDep
from api.pages import page
from api.statuses import status_of
from models.db import transaction
from models.store import case_of
from models.tables import Escalation
from workers.answering import LinkClaim, read_link
from workers.answers import answer, dangerous_options
from workers.runtime import Runtime
from workflows.errors import LinkRefused
from workflows.identities import Responder
from workflows.judgement import ReplyOutcome

router = APIRouter(include_in_schema=False)


def _claim(runtime: Runtime, signed: str) -> LinkClaim:
    return read_link(runtime.answer_key, signed, max_age=runtime.settings.link_max_age)


def _refused(refused: LinkRefused) -> HTMLResponse:
    return page("answer.html", 410, title="Link not valid", message=str(refused))


@router.get("/a/{signed}")
def confirm_page(signed: str, runtime: RuntimeDep) -> HTMLResponse:
    """Link previewers and mail scanners fetch GETs, so a GET only asks."""
    try:
        claim = _claim(runtime, signed)
    except LinkRefused as refused:
        return _refused(refused)
    with transaction(runtime.engine) as session:
        row = session.get(Escalation, claim.escalation_id)
        question = (row.packet or {}).get("requested_action") if row else None
        options = {o.label: o.description for o in case_of(row).options} if row else {}
    danger = dangerous_options(runtime, claim.escalation_id).get(claim.option)
    return page(
        "answer.html",
        title="Confirm your answer",
        message=f"Answer this case with “{claim.option}”?",
        question=question,
        option=claim.option,
        description=options.get(claim.option),
        danger=danger,
        confirm=True,
        case_id=claim.escalation_id,
    )


@router.post("/a/{signed}")
def decide_by_link(
    signed: str, runtime: RuntimeDep, confirmed: Annotated[str | None, Form(max_length=200)] = None
) -> HTMLResponse:
    """Decides; a destructive option only from its second confirmation (`confirmed`)."""
    try:
        claim = _claim(runtime, signed)
    except LinkRefused as refused:
        return _refused(refused)
    result = answer(
        runtime,
        claim.escalation_id,
        option=claim.option,
        responder=Responder(f"link via {claim.via}", verified=False),  # a link is a bearer code
        channel="link",
        confirmed=confirmed == claim.option,
    )
    if result.outcome == ReplyOutcome.NEEDS_CONFIRMATION:
        return second_confirmation(claim.option, result.message, claim.escalation_id)
    title = "Decided" if result.decided else "Not decided"
    return page(
        "answer.html", status_of(result), title=title, message=result.message,
        case_id=claim.escalation_id,
    )  # fmt: skip


def second_confirmation(option: str, consequence: str, case_id: str) -> HTMLResponse:
    """The page a destructive answer shows before it decides: its consequence, once more."""
    return page(
        "answer.html",
        title="This cannot be undone",
        message=f"Answer this case with “{option}”?",
        danger=consequence.removeprefix("Recorded. "),
        option=option,
        confirm=True,
        confirm_value=option,
        case_id=case_id,
    )
