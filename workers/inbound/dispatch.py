"""One path for every reply that arrives by code: throttle, find the case, answer, one status.

Used by the HTTP endpoints (api/answer_routes.py) and the Telegram long-polling loop.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict, deque
from typing import Any

from workers.answering import looks_like_token, normalise_token
from workers.answers import CONFLICTS, FORBIDDEN, REFUSALS, Answer, answer, find_by_token
from workers.inbound.common import Ignored, InboundMessage
from workers.inbound.telegram import TelegramPoller
from workers.runtime import Runtime
from workflows.errors import RetryableError

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


def status_of(result: Answer) -> int:
    """The HTTP status a reply's outcome maps to."""
    if result.outcome in CONFLICTS or result.outcome == "ambiguous":
        return 409
    if result.outcome in FORBIDDEN:
        return 403
    return 422 if result.outcome in REFUSALS else 200


def route_reply(
    runtime: Runtime, limiter: MissLimiter, message: InboundMessage
) -> tuple[int, dict[str, Any]]:
    """Find the case by the code the reply starts with (or a button carried) and answer it."""
    who = f"{message.channel}:{message.sender}"
    if limiter.blocked(who):
        return 429, {"detail": "too many unknown codes; wait a minute"}
    words = message.text.split(None, 1)
    code, rest = [*words, "", ""][:2]
    if message.token and normalise_token(code) != normalise_token(message.token):
        code, rest = message.token, message.text.strip()  # the button carried the code
    escalation_id = find_by_token(runtime, code) if looks_like_token(code) else None
    if escalation_id is None:
        limiter.miss(who)
        return 404, {"detail": UNKNOWN_TOKEN}
    if not rest.strip():
        return 422, {"detail": "the code needs an answer after it"}
    result = answer(
        runtime,
        escalation_id,
        text=rest,
        responder=who,
        channel=message.channel,
        message_id=message.message_id or None,
    )
    body = {
        "id": escalation_id,
        "outcome": result.outcome,
        "understood": result.option,
        "message": result.message,
        "decision": result.decision,
    }
    return status_of(result), body


def poll_telegram_once(
    runtime: Runtime, poller: TelegramPoller, limiter: MissLimiter
) -> list[tuple[int, dict[str, Any]]]:
    """One long poll: every new update answered; duplicates are caught by message id."""
    try:
        messages, _ = poller.fetch(poller.offset)
    except RetryableError as exc:
        log.warning("telegram poll: %s", exc)
        return []
    results = []
    for message in messages:
        try:
            results.append(route_reply(runtime, limiter, message))
        except Ignored:
            continue
    return results
