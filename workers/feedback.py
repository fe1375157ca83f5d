"""Telling the person who answered, in the channel they answered from, what became of it.

Slack: the button's response_url (ephemeral, only them), or chat.postEphemeral in the
thread for a typed reply when the case's Slack channel has a bot token. Telegram:
answerCallbackQuery for a button (a toast on their phone), a reply to their message for a
typed one. ntfy: a publish to the case's topic. Best effort, after the reply is recorded:
the record is what counts, so a failure here is logged and never undoes or retries it.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlmodel import col, select

from models.db import transaction
from models.tables import Delivery
from workers import ntfy_api, slack_api, telegram_api
from workers.inbound.common import InboundMessage
from workers.runtime import Runtime
from workflows.buttons import slack_text
from workflows.stage_results import PAGES
from workflows.text import one_line

log = logging.getLogger(__name__)

FEEDBACK_TIMEOUT = 3.0  # seconds: Slack wants its answer within 3 s; we never hold longer
TELEGRAM_TOAST = 200  # answerCallbackQuery's text limit


def tell(
    runtime: Runtime,
    message: InboundMessage,
    said: str,
    escalation_id: str | None,
    *,
    duplicate: bool = False,
) -> None:
    """Send `said` back to the sender of `message`; never raises. A platform's second
    delivery of one message (`duplicate`, or marked `told`) was answered the first time:
    nothing is sent."""
    if duplicate or message.answer_to.get("told"):
        return
    text = one_line(said, 600) + (f" (case {escalation_id})" if escalation_id else "")
    try:
        if message.channel == "slack":
            _slack(runtime, message, text, escalation_id)
        elif message.channel == "telegram":
            _telegram(runtime, message, text, escalation_id)
        elif message.channel == "ntfy" and escalation_id:
            _ntfy(runtime, text, escalation_id)
    except Exception:  # the reply is recorded; telling its sender is a courtesy
        log.exception("could not tell the %s sender what became of the reply", message.channel)


def _timeout(runtime: Runtime) -> float:
    return min(runtime.settings.send_timeout, FEEDBACK_TIMEOUT)


def _case_services(runtime: Runtime, escalation_id: str | None) -> list[Any]:
    """The apprise services the case was paged on, in the order they were paged; with no
    case (a code we do not know), every configured one."""
    if escalation_id is None:  # an unknown code: whichever bot is configured
        return runtime.channels.services()
    with transaction(runtime.engine) as session:
        rows = session.exec(
            select(Delivery)
            .where(Delivery.escalation_id == escalation_id, col(Delivery.purpose).in_(list(PAGES)))
            .order_by(col(Delivery.id))
        ).all()
        found = [(str(row.payload.get("tag", "")), row.target) for row in rows]
    services = []
    for tag, target in found:
        channel = runtime.channels.channel(tag, target)
        if channel is not None:
            services.append(channel.service)
    return services


def _slack(runtime: Runtime, message: InboundMessage, text: str, case: str | None) -> None:
    where, timeout = message.answer_to, _timeout(runtime)
    if "response_url" in where:
        posted = slack_api.respond(str(where["response_url"]), text, timeout=timeout)
    else:
        bot = next((b for s in _case_services(runtime, case) if (b := slack_api.bot_of(s))), None)
        if bot is None or "channel" not in where:
            return  # a webhook-only Slack setup has no way to speak to one person
        body = {"channel": where["channel"], "user": message.sender, **slack_text(text)}
        if "thread_ts" in where:
            body["thread_ts"] = where["thread_ts"]
        posted = slack_api.call(
            runtime.settings.slack_api_url, bot.token, "chat.postEphemeral", body, timeout=timeout
        )
    if posted.error:
        log.warning("feedback: %s", posted.error)


def _telegram(runtime: Runtime, message: InboundMessage, text: str, case: str | None) -> None:
    where, timeout = message.answer_to, _timeout(runtime)
    bots = [b for s in _case_services(runtime, case) if (b := telegram_api.bot_of(s))]
    # The bot that sent into this chat first: a reply comes from the bot it answered.
    bots.sort(key=lambda bot: str(where.get("chat_id")) not in {chat for chat, _ in bot.chats})
    token = runtime.settings.telegram_bot_token or next((b.token for b in bots), None)
    if not token:
        return
    api = runtime.settings.telegram_api_url
    if "callback_query_id" in where:
        body: dict[str, Any] = {
            "callback_query_id": where["callback_query_id"],
            "text": one_line(text, TELEGRAM_TOAST),
            "show_alert": False,
        }
        posted = telegram_api.call(api, token, "answerCallbackQuery", body, timeout=timeout)
    elif "chat_id" in where:
        body = {"chat_id": where["chat_id"], "text": text}
        if "message_id" in where:
            body["reply_parameters"] = {
                "message_id": where["message_id"],
                "allow_sending_without_reply": True,
            }
        posted = telegram_api.call(api, token, "sendMessage", body, timeout=timeout)
    else:
        return
    if posted.error:
        log.warning("feedback: %s", posted.error)


def _ntfy(runtime: Runtime, text: str, case: str) -> None:
    for service in _case_services(runtime, case):
        server = ntfy_api.server_of(service)
        if server is None:
            continue
        for topic in server.topics:
            body = {"topic": topic, "title": "[escalate] Your answer", "message": text}
            posted = ntfy_api.publish(server, body, timeout=_timeout(runtime))
            if posted.error:
                log.warning("feedback: %s", posted.error)
        return  # the first ntfy channel the case was paged on: one message, not one a topic
