"""Pages and resolution notices sent through the platforms' own APIs, with answer buttons.

Slack channels with a bot token, Telegram and ntfy are sent natively: the page carries the
buttons of workflows/buttons.py, and where it landed is kept on the outbox row
(platform_refs), so the case's end updates it in place (chat.update, editMessageText, an
ntfy re-publish with the same sequence id) as well as sending the short notice. A send
that reached some targets and not others keeps their refs: a retry sends only the rest.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from sqlmodel import col, select

from models.db import transaction
from models.store import case_of
from models.tables import Delivery, Escalation
from workers import ntfy_api, slack_api, telegram_api
from workers.answering import answer_links, case_token
from workers.answers import dangers_of
from workers.channels import Channel, SendOutcome, retried
from workers.platform_http import Posted
from workers.runtime import Runtime
from workflows.acknowledgements import read_acknowledgement
from workflows.buttons import (
    TELEGRAM_TEXT_LIMIT,
    Button,
    answer_buttons,
    ntfy_actions,
    slack_message,
    slack_settled,
    slack_text,
    telegram_keyboard,
)
from workflows.notifications import CHAT_ANSWER, CHAT_BUTTONS_ANSWER
from workflows.stage_results import PAGES, DeliveryState, Purpose
from workflows.text import one_line

Ref = dict[str, Any]
IN_PLACE = ("update:", "edit:")  # steps that change a sent page: best effort
log = logging.getLogger(__name__)


def is_native(channel: Channel) -> bool:
    """Whether this channel is sent here rather than through apprise."""
    service = channel.service
    return any(
        found is not None
        for found in (
            slack_api.bot_of(service),
            telegram_api.bot_of(service),
            ntfy_api.server_of(service),
        )
    )


def send(
    runtime: Runtime, delivery: Delivery, channel: Channel, *, title: str, body: str
) -> SendOutcome:
    """Send one outbox row natively; call only when is_native(channel)."""
    done: list[Ref] = [dict(ref) for ref in delivery.platform_refs or []]
    if delivery.purpose in PAGES:
        extras = _page_extras(runtime, delivery)
        originals: list[Ref] = []
    else:
        extras = None
        originals = _originals(runtime, delivery) if delivery.purpose == Purpose.RESOLUTION else []
    settings = runtime.settings
    timeout = settings.send_timeout
    service = channel.service
    if extras is not None:  # a chat page that carries buttons says so (ntfy's already does)
        body = body.replace(CHAT_ANSWER, CHAT_BUTTONS_ANSWER, 1)

    def attempt() -> SendOutcome:
        if (bot := slack_api.bot_of(service)) is not None:
            steps = _slack(settings.slack_api_url, bot, title, body, extras, originals, timeout)
        elif (tg := telegram_api.bot_of(service)) is not None:
            steps = _telegram(
                settings.telegram_api_url, tg, title, body, extras, originals, timeout
            )
        else:
            server = ntfy_api.server_of(service)
            assert server is not None
            steps = _ntfy(server, delivery, title, body, extras, timeout)
        for key, step in steps:
            if any(ref.get("key") == key for ref in done):
                continue  # landed on an earlier try
            posted, ref = step()
            if posted.state is not DeliveryState.SENT and key.startswith(IN_PLACE):
                # The page may be gone (deleted, too old to edit): the notice still goes out.
                log.warning("could not update the page in place: %s", posted.error)
                continue
            if posted.state is not DeliveryState.SENT:
                return SendOutcome(posted.state, posted.error, refs=tuple(done))
            done.append({"key": key, **ref})
        return SendOutcome(DeliveryState.SENT, refs=tuple(done))

    return retried(
        attempt,
        name=channel.name,
        tries=settings.delivery_tries,
        first_backoff=settings.delivery_backoff,
    )


class _Extras:
    """What a page's buttons need: the code, the buttons, each option's link, the case."""

    def __init__(
        self,
        token: str,
        buttons: list[Button],
        links: Mapping[str, str],
        case_url: str,
        inbound: str,
    ) -> None:
        self.token, self.buttons, self.links = token, buttons, links
        self.case_url, self.inbound = case_url, inbound


def _page_extras(runtime: Runtime, delivery: Delivery) -> _Extras:
    settings = runtime.settings
    public = settings.resolved_public_url
    with transaction(runtime.engine) as session:
        row = session.get(Escalation, delivery.escalation_id)
        assert row is not None
        options = list(case_of(row).options)
        destructive = frozenset(dangers_of(session, row))
        token = case_token(runtime.answer_key, row.id, row.pipeline)
    tag = str(delivery.payload.get("tag", ""))
    labels = [o.label for o in options]
    links = answer_links(runtime.answer_key, public, delivery.escalation_id, labels, via=tag)
    # An Ack button only where "ack" cannot be read as one of the case's options.
    ack = read_acknowledgement("ack", options) is not None
    limit = 3 if delivery.target.startswith(("ntfy://", "ntfys://")) else 24
    return _Extras(
        token,
        answer_buttons(options, destructive, ack=ack, limit=limit),
        links,
        f"{public}/dashboard/cases/{delivery.escalation_id}",
        f"{public}/v1/inbound/ntfy",
    )


def _originals(runtime: Runtime, delivery: Delivery) -> list[Ref]:
    """Where this channel's pages of the case landed: what the notice updates in place."""
    with transaction(runtime.engine) as session:
        rows = session.exec(
            select(Delivery)
            .where(
                Delivery.escalation_id == delivery.escalation_id,
                Delivery.target == delivery.target,
                col(Delivery.purpose).in_(list(PAGES)),
            )
            .order_by(col(Delivery.id))
        ).all()
        return [dict(ref) for row in rows for ref in row.platform_refs or []]


Step = tuple[str, Callable[[], tuple[Posted, Ref]]]


def _slack(
    api: str,
    bot: slack_api.SlackBot,
    title: str,
    body: str,
    extras: _Extras | None,
    originals: list[Ref],
    timeout: float,
) -> list[Step]:
    steps: list[Step] = []
    text = one_line(title, 150) + "\n" + body
    for ref in originals:  # the page, updated: the outcome in place of the question
        if "ts" not in ref:
            continue

        def update(ref: Ref = ref) -> tuple[Posted, Ref]:
            message = {"channel": ref["channel"], "ts": ref["ts"], **slack_settled(text)}
            return slack_api.call(api, bot.token, "chat.update", message, timeout=timeout), {}

        steps.append((f"update:{ref['channel']}:{ref['ts']}", update))
    for target in bot.channels:
        thread = next((r["ts"] for r in originals if r.get("to") == target and "ts" in r), None)

        def post(target: str = target, thread: str | None = thread) -> tuple[Posted, Ref]:
            if extras is not None:
                message: dict[str, Any] = slack_message(
                    title,
                    body,
                    extras.buttons,
                    token=extras.token,
                    links=extras.links,
                    case_url=extras.case_url,
                )
            else:
                message = {**slack_text(text), **({"thread_ts": thread} if thread else {})}
            posted = slack_api.call(
                api, bot.token, "chat.postMessage", {"channel": target, **message}, timeout=timeout
            )
            where = {"to": target, "channel": posted.data.get("channel", target)}
            return posted, where | ({"ts": posted.data["ts"]} if "ts" in posted.data else {})

        steps.append((f"post:{target}", post))
    return steps


def _telegram(
    api: str,
    bot: telegram_api.TelegramBot,
    title: str,
    body: str,
    extras: _Extras | None,
    originals: list[Ref],
    timeout: float,
) -> list[Step]:
    steps: list[Step] = []
    text = (one_line(title, 150) + "\n" + body)[:TELEGRAM_TEXT_LIMIT]
    for ref in originals:  # the keyboard goes with the question: nothing left to press

        def edit(ref: Ref = ref) -> tuple[Posted, Ref]:
            message = {
                "chat_id": ref["chat_id"],
                "message_id": ref["message_id"],
                "text": text,
                "reply_markup": {"inline_keyboard": []},
            }
            posted = telegram_api.call(api, bot.token, "editMessageText", message, timeout=timeout)
            if "not modified" in str(posted.data.get("description", "")):
                posted = Posted(DeliveryState.SENT, posted.data)  # done on an earlier try
            return posted, {}

        steps.append((f"edit:{ref['chat_id']}:{ref['message_id']}", edit))
    for chat, topic in bot.chats:
        replied = next((r for r in originals if r.get("to") == chat), None)

        def post(
            chat: str = chat, topic: int | None = topic, replied: Ref | None = replied
        ) -> tuple[Posted, Ref]:
            message: dict[str, Any] = {
                "chat_id": chat,
                "text": text,
                "link_preview_options": {"is_disabled": True},
            }
            if topic is not None:
                message["message_thread_id"] = topic
            if extras is not None:
                message["reply_markup"] = telegram_keyboard(
                    extras.buttons, token=extras.token, links=extras.links, case_url=extras.case_url
                )
            elif replied is not None:
                message["reply_parameters"] = {
                    "message_id": replied["message_id"],
                    "allow_sending_without_reply": True,
                }
            posted = telegram_api.call(api, bot.token, "sendMessage", message, timeout=timeout)
            result = posted.data.get("result") or {}
            where: Ref = {"to": chat}
            if isinstance(result, dict) and "message_id" in result:
                chat_id = (result.get("chat") or {}).get("id", chat)
                where |= {"chat_id": chat_id, "message_id": result["message_id"]}
            return posted, where

        steps.append((f"post:{chat}", post))
    return steps


def _ntfy(
    server: ntfy_api.NtfyServer,
    delivery: Delivery,
    title: str,
    body: str,
    extras: _Extras | None,
    timeout: float,
) -> list[Step]:
    # One sequence id per case and channel: the follow-up and the notice replace the page.
    sequence = f"escalate-{delivery.escalation_id}"
    steps: list[Step] = []
    for topic in server.topics:

        def publish(topic: str = topic) -> tuple[Posted, Ref]:
            message: dict[str, Any] = {
                "topic": topic,
                "title": title,
                "message": body,
                "sequence_id": sequence,
            }
            if extras is not None:
                message["click"] = extras.case_url
                message["actions"] = ntfy_actions(
                    extras.buttons,
                    token=extras.token,
                    inbound_url=extras.inbound,
                    links=extras.links,
                )
            return ntfy_api.publish(server, message, timeout=timeout), {
                "to": topic,
                "sequence_id": sequence,
            }

        steps.append((f"publish:{topic}", publish))
    return steps
