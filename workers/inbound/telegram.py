"""Telegram: check the webhook's secret header, read updates, or long-poll getUpdates."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import httpx

from workers.inbound.common import InboundMessage, header, leading_token, same_secret
from workflows.errors import (
    ConfigError,
    Ignored,
    InboundRejected,
    PermanentError,
    Rejection,
    RetryableError,
)

log = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
API_BASE = "https://api.telegram.org"
# Edits are not asked for: see parse_update. The poller and setWebhook should both send this.
ALLOWED_UPDATES = ("message", "callback_query")
CONNECT_TIMEOUT = 10.0  # seconds; the read timeout is the long-poll timeout plus this


def verify(secret_token: str, headers: Mapping[str, str]) -> None:
    """Accept only a webhook call carrying our setWebhook secret_token; else 401."""
    if not secret_token:
        raise InboundRejected("no Telegram webhook secret is configured", why=Rejection.NOT_GENUINE)
    given = header(headers, SECRET_HEADER)
    if not given:
        raise InboundRejected(f"missing {SECRET_HEADER}", why=Rejection.NOT_GENUINE)
    if not same_secret(secret_token, given):
        raise InboundRejected(f"{SECRET_HEADER} does not match", why=Rejection.NOT_GENUINE)


def parse_update(update: Mapping[str, Any]) -> InboundMessage:
    """A text message or an inline-button press as a reply; Ignored for every other update.

    Edited messages are Ignored on purpose: a decision is taken once, from what was first
    sent, and an edit must neither change it nor count as a second reply.
    """
    update_id = update.get("update_id")
    if not isinstance(update_id, int) or isinstance(update_id, bool):
        raise InboundRejected("update without an integer update_id")
    message_id = str(update_id)  # Telegram re-sends an update with the same id
    if isinstance(message := update.get("message"), Mapping):
        sender = _sender(message)
        text = message.get("text")
        if not isinstance(text, str) or not text.strip():
            raise Ignored("message without text (sticker, photo, service message...)")
        return InboundMessage(
            text.strip(),
            "telegram",
            sender,
            message_id,
            verified=True,
            answer_to=_where(message),
        )
    if isinstance(query := update.get("callback_query"), Mapping):
        sender = _sender(query)
        data = query.get("data")
        if not isinstance(data, str) or not data.strip():
            raise Ignored("callback_query without data (a game button)")
        # Clients can send any data here: the token is a claim, checked by the caller.
        text = data.strip()
        where = _where(query.get("message"))
        if isinstance(query.get("id"), str):
            where["callback_query_id"] = query["id"]
        return InboundMessage(
            text,
            "telegram",
            sender,
            message_id,
            token=leading_token(text),
            verified=True,
            answer_to=where,
        )
    kinds = sorted(key for key in update if key != "update_id")
    raise Ignored(f"Telegram update of kind {', '.join(kinds) or '(none)'}")


def _where(message: Any) -> dict[str, Any]:
    """The chat and message a reply came from (or a button sat under)."""
    if not isinstance(message, Mapping):
        return {}
    chat = message.get("chat")
    chat_id = chat.get("id") if isinstance(chat, Mapping) else None
    if not isinstance(chat_id, int | str) or isinstance(chat_id, bool):
        return {}
    where: dict[str, Any] = {"chat_id": chat_id}
    if isinstance(message.get("message_id"), int):
        where["message_id"] = message["message_id"]
    return where


def _sender(item: Mapping[str, Any]) -> str:
    user = item.get("from")
    user_id = user.get("id") if isinstance(user, Mapping) else None
    if not isinstance(user, Mapping) or not isinstance(user_id, int) or isinstance(user_id, bool):
        raise Ignored("no sender (a channel post or an anonymous admin)")
    if user.get("is_bot"):
        raise Ignored("a bot's message")
    return str(user_id)


def mask_token(text: str, bot_token: str) -> str:
    """`text` with the bot token replaced by its public half (the bot id) and stars."""
    if not bot_token:
        return text
    bot_id = bot_token.split(":", 1)[0]
    return text.replace(bot_token, f"{bot_id}:***")


class TelegramPoller:
    """getUpdates long polling, for setups with no public URL; one poller per bot token.

    The offset is kept between calls, so one poller never returns an update twice. Telegram
    forgets updates below the offset sent, so record what `fetch` returned before calling it
    again; after a failure to record, start a new poller from the offset you stored.
    """

    def __init__(
        self,
        bot_token: str,
        *,
        client: httpx.Client | None = None,
        timeout: int = 25,
        api_url: str = API_BASE,
    ) -> None:
        if not bot_token:
            raise ConfigError("a Telegram bot token is required")
        self._token = bot_token
        self._url = f"{api_url.rstrip('/')}/bot{bot_token}/getUpdates"
        self._client = client if client is not None else httpx.Client()
        self._owns_client = client is None
        self._timeout = timeout
        self._offset: int | None = None

    @property
    def offset(self) -> int | None:
        """The next update_id this poller asks for (None before the first update)."""
        return self._offset

    def fetch(self, offset: int | None) -> tuple[list[InboundMessage], int | None]:
        """Replies since `offset` (never below what this poller already returned), next offset."""
        kept = self._offset
        start = offset if kept is None else kept if offset is None else max(offset, kept)
        body: dict[str, Any] = {"timeout": self._timeout, "allowed_updates": list(ALLOWED_UPDATES)}
        if start is not None:
            body["offset"] = start
        updates = self._call(body)
        messages: list[InboundMessage] = []
        highest: int | None = None
        for update in updates:
            update_id = update.get("update_id") if isinstance(update, Mapping) else None
            if not isinstance(update_id, int) or isinstance(update_id, bool):
                log.warning("telegram: skipped an update without update_id")
                continue
            if start is not None and start >= 0 and update_id < start:
                continue  # already returned (or confirmed): never hand it out twice
            highest = update_id if highest is None else max(highest, update_id)
            try:
                messages.append(parse_update(update))
            except Ignored:
                pass  # still confirmed by the next offset: Telegram must not resend it
            except InboundRejected as exc:
                log.warning("telegram: skipped update %s: %s", update_id, exc.reason)
        next_offset = start if highest is None else highest + 1
        self._offset = next_offset
        return messages, next_offset

    def _call(self, body: Mapping[str, Any]) -> list[Any]:
        timeout = httpx.Timeout(CONNECT_TIMEOUT, read=self._timeout + CONNECT_TIMEOUT)
        # `from None` throughout: httpx errors carry the request URL, and the URL holds the token.
        try:
            response = self._client.post(self._url, json=body, timeout=timeout)
        except httpx.TimeoutException:
            raise RetryableError(
                f"telegram getUpdates: no answer within {self._timeout + CONNECT_TIMEOUT:g}s"
            ) from None
        except httpx.HTTPError as exc:
            reason = self._mask(f"{type(exc).__name__}: {exc}")
            raise RetryableError(f"telegram getUpdates: {reason}"[:300]) from None
        status = response.status_code
        try:
            data = response.json()
        except ValueError:
            data = None
        description = ""
        if isinstance(data, Mapping):
            description = self._mask(str(data.get("description") or ""))[:200]
        if status in (401, 404):
            raise PermanentError(
                f"telegram refused bot token {self._mask(self._token)} "
                f"(HTTP {status} {description}): check the token"
            )
        if status == 409:
            # A webhook is set (getUpdates is off until deleteWebhook), or another poller runs:
            # the first is configuration, the second may end when the old process stops.
            error = PermanentError if "webhook" in description.lower() else RetryableError
            raise error(f"telegram getUpdates conflict (HTTP 409): {description}")
        if status == 429 or status >= 500:
            retry_after = ""
            if isinstance(data, Mapping) and isinstance(data.get("parameters"), Mapping):
                seconds = data["parameters"].get("retry_after")
                retry_after = f", retry after {seconds}s" if seconds is not None else ""
            raise RetryableError(f"telegram getUpdates: HTTP {status} {description}{retry_after}")
        if not response.is_success:
            raise PermanentError(f"telegram getUpdates: HTTP {status} {description}")
        if not isinstance(data, Mapping):
            raise RetryableError("telegram getUpdates: the answer is not JSON (a proxy page?)")
        if data.get("ok") is not True:
            raise PermanentError(f"telegram getUpdates: not ok: {description}")
        result = data.get("result")
        if not isinstance(result, list):
            raise RetryableError("telegram getUpdates: the answer has no result list")
        return result

    def _mask(self, text: str) -> str:
        return mask_token(text, self._token)

    def close(self) -> None:
        """Close the HTTP client if this poller made it."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> TelegramPoller:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"TelegramPoller({self._mask(self._token)!r}, offset={self._offset})"
