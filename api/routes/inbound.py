"""Replies that arrive by code: a chat bridge's text, and Slack, Telegram and ntfy webhooks."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from starlette.background import BackgroundTask

from api.deps import CallerAddress, LimiterDep, OperatorHolder, RuntimeDep
from api.schemas import InboundAnswer, InboundTextCreate
from api.statuses import error_body, status_of, status_of_error
from api.views import inbound_answer
from workers import feedback
from workers.inbound import ntfy, slack, telegram
from workers.inbound.common import InboundMessage
from workers.inbound.dispatch import MissLimiter, route_reply
from workers.runtime import Runtime
from workflows.errors import Ignored, InboundRejected, InvalidInput, NotFound
from workflows.judgement import ReplyOutcome

router = APIRouter()
PLATFORM_ANSWERS: dict[int | str, dict[str, Any]] = {
    200: {"model": InboundAnswer},
    409: {"model": InboundAnswer},
}


def _answered(
    runtime: Runtime, limiter: MissLimiter, message: InboundMessage, caller: str | None
) -> JSONResponse:
    """The reply judged and recorded; its sender told in their channel after we answer.

    A Slack button press and a Telegram webhook update are answered 200 whatever became of
    them (Slack shows the presser an error for any other status; Telegram sends the update
    again, and a mistyped code would count as a miss each time): the outcome is in the body,
    and the sender is told in their chat.
    """
    try:
        result = route_reply(runtime, limiter, message, caller=caller)
    except (NotFound, InvalidInput) as refused:  # said back too: a typo is not a silence
        told = BackgroundTask(feedback.tell, runtime, message, str(refused), None)
        status = _ok_for_buttons(message, status_of_error(refused))
        return JSONResponse(error_body(refused), status, background=told)
    told = BackgroundTask(
        feedback.tell,
        runtime,
        message,
        result.message,
        result.escalation_id,
        duplicate=result.outcome is ReplyOutcome.DUPLICATE,
    )
    body = inbound_answer(result).model_dump(mode="json")
    return JSONResponse(body, _ok_for_buttons(message, status_of(result)), background=told)


def _ok_for_buttons(message: InboundMessage, status: int) -> int:
    told_in_chat = "response_url" in message.answer_to or message.channel == "telegram"
    return 200 if told_in_chat else status


def _from_platform(
    runtime: Runtime,
    limiter: MissLimiter,
    read: Callable[[], InboundMessage | dict[str, str]],
    caller: str | None = None,
) -> JSONResponse:
    """Read the platform's request (refusals reach the error handler) and answer its reply."""
    try:
        message = read()
    except Ignored as ignored:
        return JSONResponse({"ignored": ignored.reason}, 200)
    if isinstance(message, dict):  # Slack's url_verification challenge
        return JSONResponse(message, 200)
    try:
        return _answered(runtime, limiter, message, caller)
    except Ignored as ignored:  # chatter: a 2xx, so the platform does not resend it
        return JSONResponse({"ignored": ignored.reason}, 200)


@router.post(
    "/v1/inbound/text", response_model=InboundAnswer, responses={409: {"model": InboundAnswer}}
)
def inbound_text(
    body: InboundTextCreate,
    runtime: RuntimeDep,
    limiter: LimiterDep,
    response: Response,
    holder: OperatorHolder,
) -> Any:
    """A reply from any chat bridge: the text starts with the case's code."""
    if body.text is None or not body.text.strip():
        raise InvalidInput("no text: send {text, channel, sender}")
    message = InboundMessage(
        text=body.text,
        # A bridge reports names; it cannot pose as a platform we verify ourselves.
        channel="bridge:" + (body.channel or "text"),
        sender=body.sender or "unknown",
        message_id=body.message_id or "",
    )
    # Throttled per token holder: a bridge's reported channel and sender are its own words.
    try:
        result = route_reply(runtime, limiter, message, caller=f"token:{holder.identity}")
    except Ignored as ignored:  # a bridge may forward every line: chatter is not an error
        return JSONResponse({"ignored": ignored.reason}, 200)
    response.status_code = status_of(result)
    return inbound_answer(result)


@router.post("/v1/inbound/slack", responses=PLATFORM_ANSWERS)
async def inbound_slack(request: Request, runtime: RuntimeDep, limiter: LimiterDep) -> JSONResponse:
    """Slack Events API and interactive buttons; the signature is checked on the raw body."""
    secret = runtime.settings.slack_signing_secret
    if not secret:
        return JSONResponse({"detail": "Slack is not configured"}, 503)
    raw = await request.body()

    def read() -> InboundMessage | dict[str, str]:
        slack.verify(secret, request.headers, raw, now=time.time())
        message = slack.parse(raw, request.headers.get("content-type", ""))
        if isinstance(message, InboundMessage) and request.headers.get(slack.RETRY_HEADER):
            # Slack resends an event it got no 2xx for: its sender was told the first time.
            message = replace(message, answer_to={**message.answer_to, "told": True})
        return message

    return await run_in_threadpool(_from_platform, runtime, limiter, read)


@router.post("/v1/inbound/telegram", responses=PLATFORM_ANSWERS)
async def inbound_telegram(
    request: Request, runtime: RuntimeDep, limiter: LimiterDep
) -> JSONResponse:
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

    return await run_in_threadpool(_from_platform, runtime, limiter, read)


@router.post("/v1/inbound/ntfy", responses=PLATFORM_ANSWERS)
async def inbound_ntfy(
    request: Request, runtime: RuntimeDep, limiter: LimiterDep, caller: CallerAddress
) -> JSONResponse:
    """ntfy action buttons: the phone POSTs '<code> <option>'; the code is the credential."""
    raw = await request.body()
    # ntfy names no sender: throttle unknown codes per caller address instead (the peer, or
    # what a configured trusted proxy reports), so one guesser cannot lock everybody out.

    def read() -> InboundMessage:
        return replace(ntfy.parse(raw, request.headers), sender=f"ntfy@{caller}")

    return await run_in_threadpool(_from_platform, runtime, limiter, read, f"ntfy@{caller}")
