"""Answering from anywhere: chat-bridge text starting with the token, and one-click links."""

from __future__ import annotations

import time
from collections import defaultdict, deque
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends
from fastapi.responses import HTMLResponse, JSONResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape

from api.auth import require
from models.db import transaction
from models.tables import Escalation
from workers.answering import LinkRefused, looks_like_token, read_link
from workers.answers import CONFLICTS, REFUSALS, Answer, answer, find_by_token
from workers.runtime import Runtime

TEMPLATES = Environment(
    loader=FileSystemLoader(Path(__file__).resolve().parent / "templates"),
    autoescape=select_autoescape(["html"]),
)
UNKNOWN_TOKEN = "unknown or expired code"  # one answer for unknown, expired and forged
MAX_MISSES_PER_MINUTE = 10  # per sender: guessing a 50-bit code stays hopeless (README)


class MissLimiter:
    """Counts failed token lookups per sender, so codes cannot be guessed at speed."""

    def __init__(self) -> None:
        self._misses: dict[str, deque[float]] = defaultdict(deque)

    def blocked(self, sender: str) -> bool:
        recent = self._misses[sender]
        while recent and recent[0] < time.monotonic() - 60:
            recent.popleft()
        return len(recent) >= MAX_MISSES_PER_MINUTE

    def miss(self, sender: str) -> None:
        self._misses[sender].append(time.monotonic())


def _status(result: Answer) -> int:
    if result.outcome in CONFLICTS or result.outcome == "ambiguous":
        return 409
    return 422 if result.outcome in REFUSALS else 200


def answer_router(runtime: Runtime) -> APIRouter:
    router = APIRouter()
    limiter = MissLimiter()

    @router.post("/v1/inbound/text")
    def inbound_text(
        body: Annotated[dict[str, Any], Body(description='{"text", "channel", "sender"}')],
        _role: Annotated[str, Depends(require("operator"))],
    ) -> JSONResponse:
        """A reply from any chat bridge: the text starts with the case's code."""
        text, channel, sender = body.get("text"), body.get("channel"), body.get("sender")
        if not isinstance(text, str) or not text.strip():
            return JSONResponse({"detail": "no text: send {text, channel, sender}"}, 422)
        channel = channel if isinstance(channel, str) and channel else "inbound"
        sender = sender if isinstance(sender, str) and sender else "unknown"
        who = f"{channel}:{sender}"
        if limiter.blocked(who):
            return JSONResponse({"detail": "too many unknown codes; wait a minute"}, 429)
        code, _, rest = text.strip().partition(" ")
        escalation_id = find_by_token(runtime, code) if looks_like_token(code) else None
        if escalation_id is None:
            limiter.miss(who)
            return JSONResponse({"detail": UNKNOWN_TOKEN}, 404)
        if not rest.strip():
            return JSONResponse({"detail": "the code needs an answer after it"}, 422)
        result = answer(runtime, escalation_id, text=rest, responder=who, channel=channel)
        return JSONResponse(
            {
                "id": escalation_id,
                "outcome": result.outcome,
                "understood": result.option,
                "message": result.message,
                "decision": result.decision,
            },
            _status(result),
        )

    def page(status: int, title: str, message: str, **extra: Any) -> HTMLResponse:
        html = TEMPLATES.get_template("answer.html").render(title=title, message=message, **extra)
        return HTMLResponse(html, status)

    def claim_of(signed: str) -> Any:
        return read_link(runtime.answer_key, signed, max_age=runtime.settings.link_max_age)

    @router.get("/a/{signed}", include_in_schema=False)
    def confirm_page(signed: str) -> HTMLResponse:
        """Link previewers and mail scanners fetch GETs, so a GET only asks."""
        try:
            claim = claim_of(signed)
        except LinkRefused as refused:
            return page(410, "Link not valid", str(refused))
        with transaction(runtime.engine) as session:
            row = session.get(Escalation, claim.escalation_id)
            question = (row.packet or {}).get("requested_action") if row else None
        return page(
            200,
            "Confirm your answer",
            f"Answer this case with “{claim.option}”?",
            question=question,
            option=claim.option,
            confirm=True,
            case_id=claim.escalation_id,
        )

    @router.post("/a/{signed}", include_in_schema=False)
    def decide_by_link(signed: str) -> HTMLResponse:
        try:
            claim = claim_of(signed)
        except LinkRefused as refused:
            return page(410, "Link not valid", str(refused))
        result = answer(
            runtime,
            claim.escalation_id,
            option=claim.option,
            responder=f"link via {claim.via}",
            channel="link",
        )
        title = "Decided" if result.decided else "Not decided"
        return page(_status(result), title, result.message, case_id=claim.escalation_id)

    return router
