"""Answering from anywhere: chat-bridge text starting with the token, and one-click links."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, JSONResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape

from api.auth import require
from api.statuses import status_of, status_of_error
from models.db import transaction
from models.store import case_of
from models.tables import Escalation
from workers.answering import read_link
from workers.answers import answer
from workers.inbound import ntfy, slack, telegram
from workers.inbound.common import InboundMessage
from workers.inbound.dispatch import MissLimiter, route_reply
from workers.runtime import Runtime
from workflows.errors import Ignored, InboundRejected, LinkRefused

TEMPLATES = Environment(
    loader=FileSystemLoader(Path(__file__).resolve().parent / "templates"),
    autoescape=select_autoescape(["html"]),
)


def answer_router(runtime: Runtime) -> APIRouter:
    router = APIRouter()
    limiter = MissLimiter()

    def handle(message: InboundMessage) -> JSONResponse:
        result = route_reply(runtime, limiter, message)
        body = {
            "id": result.escalation_id,
            "outcome": result.outcome,
            "understood": result.option,
            "message": result.message,
            "decision": result.decision,
        }
        return JSONResponse(body, status_of(result))

    def from_platform(read: Callable[[], InboundMessage | dict[str, str]]) -> JSONResponse:
        try:
            message = read()
        except InboundRejected as rejected:
            return JSONResponse({"detail": rejected.reason}, status_of_error(rejected))
        except Ignored as ignored:
            return JSONResponse({"ignored": ignored.reason}, 200)
        if isinstance(message, dict):  # Slack's url_verification challenge
            return JSONResponse(message, 200)
        return handle(message)

    @router.post("/v1/inbound/text")
    def inbound_text(
        body: Annotated[dict[str, Any], Body(description='{"text", "channel", "sender"}')],
        _role: Annotated[str, Depends(require("operator"))],
    ) -> JSONResponse:
        """A reply from any chat bridge: the text starts with the case's code."""
        text, channel, sender = body.get("text"), body.get("channel"), body.get("sender")
        if not isinstance(text, str) or not text.strip():
            return JSONResponse({"detail": "no text: send {text, channel, sender}"}, 422)
        message_id = body.get("message_id")
        return handle(
            InboundMessage(
                text=text,
                # A bridge reports names; it cannot pose as a platform we verify ourselves.
                channel="bridge:" + (channel if isinstance(channel, str) and channel else "text"),
                sender=sender if isinstance(sender, str) and sender else "unknown",
                message_id=message_id if isinstance(message_id, str) else "",
            )
        )

    @router.post("/v1/inbound/slack")
    async def inbound_slack(request: Request) -> JSONResponse:
        """Slack Events API and interactive buttons; the signature is checked on the raw body."""
        secret = runtime.settings.slack_signing_secret
        if not secret:
            return JSONResponse({"detail": "Slack is not configured"}, 503)
        raw = await request.body()

        def read() -> InboundMessage | dict[str, str]:
            slack.verify(secret, request.headers, raw, now=time.time())
            return slack.parse(raw, request.headers.get("content-type", ""))

        return await run_in_threadpool(from_platform, read)

    @router.post("/v1/inbound/telegram")
    async def inbound_telegram(request: Request) -> JSONResponse:
        """Telegram webhook updates; the secret token header is checked first."""
        secret = runtime.settings.telegram_secret
        if not secret:
            return JSONResponse({"detail": "Telegram is not configured"}, 503)
        raw = await request.body()

        def read() -> InboundMessage | dict[str, str]:
            telegram.verify(secret, request.headers)
            try:
                update = json.loads(raw)
            except ValueError:
                raise InboundRejected("the update is not JSON") from None
            if not isinstance(update, dict):
                raise InboundRejected("the update is not a JSON object")
            return telegram.parse_update(update)

        return await run_in_threadpool(from_platform, read)

    @router.post("/v1/inbound/ntfy")
    async def inbound_ntfy(request: Request) -> JSONResponse:
        """ntfy action buttons: the phone POSTs '<code> <option>'; the code is the credential."""
        raw = await request.body()
        # ntfy names no sender: throttle unknown codes per caller address instead, so one
        # guesser cannot lock everybody's buttons out.
        caller = request.client.host if request.client else "unknown"

        def read() -> InboundMessage:
            return replace(ntfy.parse(raw, request.headers), sender=f"ntfy@{caller}")

        return await run_in_threadpool(from_platform, read)

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
            options = {o.label: o.description for o in case_of(row).options} if row else {}
        return page(
            200,
            "Confirm your answer",
            f"Answer this case with “{claim.option}”?",
            question=question,
            option=claim.option,
            description=options.get(claim.option),
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
        return page(status_of(result), title, result.message, case_id=claim.escalation_id)

    return router
