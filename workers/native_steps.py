"""Each platform's requests for one outbox row, as keyed steps (workers/native_pages.py).

A step's key names what it does and where ("post:C0TEST", "edit:4242:100"), so a retry skips
what landed before. A page posts with its buttons; a notice first updates the pages it
follows (the in-place steps, best effort), then posts the short notice beside them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from models.tables import Delivery
from workers import ntfy_api, slack_api, telegram_api
from workers.platform_http import Posted
from workflows.buttons import (
    TELEGRAM_TEXT_LIMIT,
    Button,
    ntfy_actions,
    slack_message,
    slack_settled,
    slack_text,
    telegram_keyboard,
)
from workflows.stage_results import DeliveryState
from workflows.text import one_line

Ref = dict[str, Any]
IN_PLACE = ("update:", "edit:")  # steps that change a sent page: best effort


@dataclass(frozen=True)
class Extras:
    """What a page's buttons need: the code, the buttons, each option's link, the case."""

    token: str
    buttons: list[Button]
    links: Mapping[str, str]
    case_url: str
    inbound: str


Step = tuple[str, Callable[[], tuple[Posted, Ref]]]


def slack_steps(
    api: str,
    bot: slack_api.SlackBot,
    title: str,
    body: str,
    extras: Extras | None,
    originals: list[Ref],
    timeout: float,
) -> list[Step]:
    """chat.update for each page of the case (a notice), then chat.postMessage per channel."""
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


def telegram_steps(
    api: str,
    bot: telegram_api.TelegramBot,
    title: str,
    body: str,
    extras: Extras | None,
    originals: list[Ref],
    timeout: float,
) -> list[Step]:
    """editMessageText for each page of the case (a notice), then sendMessage per chat."""
    steps: list[Step] = []
    text = (one_line(title, 150) + "\n" + body)[:TELEGRAM_TEXT_LIMIT]
    for ref in originals:  # the keyboard goes with the question: nothing left to press
        if "message_id" not in ref:
            continue

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


def ntfy_steps(
    server: ntfy_api.NtfyServer,
    delivery: Delivery,
    title: str,
    body: str,
    extras: Extras | None,
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
