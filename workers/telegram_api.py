"""Telegram's Bot API for tgram:// channels: sendMessage with an inline keyboard, then
editMessageText when the case ends, answerCallbackQuery and replies for feedback.

Every tgram:// URL holds its bot token, so every Telegram channel is sent natively. The
token is in the request path: it never reaches a log or an error. The base URL is a
setting (ESCALATE_TELEGRAM_API_URL), so tests reach a local sink.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workers.platform_http import Posted, post_json


@dataclass(frozen=True)
class TelegramBot:
    """The bot token and the chats (id, forum topic) one apprise tgram:// URL names."""

    token: str
    chats: tuple[tuple[str, int | None], ...]


def bot_of(service: Any) -> TelegramBot | None:
    if type(service).__name__ != "NotifyTelegram":
        return None
    token = getattr(service, "bot_token", None)
    chats = tuple(
        (str(chat), topic if isinstance(topic, int) else None)
        for chat, topic in getattr(service, "targets", ()) or ()
    )
    return TelegramBot(token, chats) if token and chats else None


def call(
    api_url: str, token: str, method: str, body: Mapping[str, Any], *, timeout: float
) -> Posted:
    """One Bot API method; its answer's `ok: false` is a failure."""
    return post_json(
        f"{api_url.rstrip('/')}/bot{token}/{method}",
        body,
        name=f"telegram {method}",
        timeout=timeout,
    )
