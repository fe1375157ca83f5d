"""One path for every reply that arrives by code: throttle, find the case, answer.

Used by the HTTP endpoints (api/routes/inbound.py) and the Telegram long-polling loop.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict, deque

from workers.answering import looks_like_token, normalise_token
from workers.answers import Answer, answer, find_by_token
from workers.inbound.common import InboundMessage
from workers.inbound.telegram import TelegramPoller
from workers.runtime import Runtime
from workflows.errors import (
    EscalationError,
    Ignored,
    InvalidInput,
    NotFound,
    RetryableError,
    Throttled,
)

log = logging.getLogger(__name__)

UNKNOWN_TOKEN = "unknown or expired code"  # one answer for unknown, expired and forged
MAX_MISSES_PER_MINUTE = 10  # per sender: guessing a 50-bit code stays hopeless (README)


class MissLimiter:
    """Counts failed code lookups per sender, so codes cannot be guessed at speed."""

    def __init__(self) -> None:
        self._misses: dict[str, deque[float]] = defaultdict(deque)

    def blocked(self, sender: str) -> bool:
        recent = self._misses[sender]
        while recent and recent[0] < time.monotonic() - 60:
            recent.popleft()
        return len(recent) >= MAX_MISSES_PER_MINUTE

    def miss(self, sender: str) -> None:
        self._misses[sender].append(time.monotonic())


def route_reply(runtime: Runtime, limiter: MissLimiter, message: InboundMessage) -> Answer:
    """Find the case by the code the reply starts with (or a button carried) and answer it.

    Raises Ignored for chatter (no code-shaped first word), Throttled while this sender keeps
    missing, NotFound for a code that is not a live case's, InvalidInput for a bare code.
    """
    who = f"{message.channel}:{message.sender}"
    words = message.text.split(None, 1)
    code, rest = [*words, "", ""][:2]
    if message.token and normalise_token(code) != normalise_token(message.token):
        code, rest = message.token, message.text.strip()  # the button carried the code
    elif not looks_like_token(code):
        # Chatter in a channel we read: not a reply, so not a guess either (issue #10).
        raise Ignored("not a reply: it does not start with a code")
    if limiter.blocked(who):
        raise Throttled("too many unknown codes; wait a minute")
    escalation_id = find_by_token(runtime, code)
    if escalation_id is None:
        limiter.miss(who)
        raise NotFound(UNKNOWN_TOKEN)
    if not rest.strip():
        raise InvalidInput("the code needs an answer after it")
    return answer(
        runtime,
        escalation_id,
        text=rest,
        responder=who,
        channel=message.channel,
        message_id=message.message_id or None,
    )


def poll_telegram_once(
    runtime: Runtime, poller: TelegramPoller, limiter: MissLimiter
) -> list[Answer | EscalationError]:
    """One long poll: every new update answered (or the reason it was not); duplicates are
    caught by message id, updates that are not replies are skipped."""
    try:
        messages, _ = poller.fetch(poller.offset)
    except RetryableError as exc:
        log.warning("telegram poll: %s", exc)
        return []
    results: list[Answer | EscalationError] = []
    for message in messages:
        try:
            results.append(route_reply(runtime, limiter, message))
        except Ignored:
            continue
        except EscalationError as refused:
            results.append(refused)
    return results
