"""What every inbound adapter returns or raises: one reply shape, one refusal, one 'not a reply'."""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from workers.answering import looks_like_token


@dataclass(frozen=True)
class InboundMessage:
    """One operator reply, platform-neutral: `text` starts with the token when one was sent."""

    text: str
    channel: str  # "slack" | "telegram" | "ntfy" | ...
    sender: str  # the platform's stable user id ("ntfy" has none: the token is all there is)
    message_id: str  # the platform's id for this delivery, for the caller's dedup
    token: str | None = None  # set when a button we built carried it; else take text's 1st word
    # The platform vouched for `sender` (a checked signature or our bot's own API); ntfy and
    # chat bridges only report a name.
    verified: bool = False
    # Where the sender is told what became of the reply (workers/feedback.py): Slack's
    # response_url or channel, Telegram's chat, message and callback query ids.
    answer_to: Mapping[str, Any] = field(default_factory=dict, compare=False)


def header(headers: Mapping[str, str], name: str) -> str | None:
    """A header's value by case-insensitive name (dicts and Starlette's Headers alike)."""
    value = headers.get(name)
    if value is not None:
        return value
    wanted = name.lower()
    for key, candidate in headers.items():
        if key.lower() == wanted:
            return candidate
    return None


def same_secret(expected: str, given: str) -> bool:
    """Constant-time equality on bytes (str compare_digest refuses non-ASCII header values)."""
    return hmac.compare_digest(
        expected.encode("utf-8", "surrogatepass"), given.encode("utf-8", "surrogatepass")
    )


def leading_token(text: str) -> str | None:
    """The first word of `text` if it has the shape of a correlation token, else None."""
    # The shape only selects (workers/answering.py); the store decides validity.
    words = text.split(None, 1)
    if words and looks_like_token(words[0]):
        return words[0]
    return None
