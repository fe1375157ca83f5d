"""One path for every reply that arrives by code: throttle, find the case, answer.

Used by the HTTP endpoints (api/routes/inbound.py) and the Telegram long-polling loop.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict, deque

from workers import feedback
from workers.acknowledgements import acknowledge_from_chat
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
from workflows.identities import Responder
from workflows.judgement import ReplyOutcome

log = logging.getLogger(__name__)

UNKNOWN_TOKEN = "unknown or expired code"  # one answer for unknown, expired and forged
MAX_MISSES_PER_MINUTE = 10  # per caller key: guessing a 50-bit code stays hopeless (README)
MAX_TRACKED_KEYS = 10_000  # callers remembered at once (about 2 MB at worst)


class MissLimiter:
    """Counts failed code lookups per caller key, so codes cannot be guessed at speed.

    The key is what the server knows of the caller (a platform-verified user, a token's
    holder, a peer address), never a name the caller typed. At most `max_keys` keys are
    kept: the least recently missed are forgotten first, so memory stays bounded however
    many keys a guesser rotates through.
    """

    def __init__(self, *, max_keys: int = MAX_TRACKED_KEYS) -> None:
        self._misses: OrderedDict[str, deque[float]] = OrderedDict()
        self._max_keys = max_keys

    def __len__(self) -> int:
        return len(self._misses)

    def blocked(self, key: str) -> bool:
        recent = self._misses.get(key)
        if recent is None:
            return False
        while recent and recent[0] < time.monotonic() - 60:
            recent.popleft()
        if not recent:
            del self._misses[key]
            return False
        return len(recent) >= MAX_MISSES_PER_MINUTE

    def miss(self, key: str) -> None:
        recent = self._misses.pop(key, None) or deque(maxlen=MAX_MISSES_PER_MINUTE)
        recent.append(time.monotonic())
        self._misses[key] = recent  # most recent last
        while len(self._misses) > self._max_keys:
            self._misses.popitem(last=False)


def route_reply(
    runtime: Runtime, limiter: MissLimiter, message: InboundMessage, *, caller: str | None = None
) -> Answer:
    """Find the case by the code the reply starts with (or a button carried) and answer it.

    `caller` keys the miss limit: what the server knows of an unverified caller (a token's
    holder, a peer address); a verified message is keyed on its platform user. Raises
    Ignored for chatter (no code-shaped first word), Throttled while that key keeps
    missing, NotFound for a code that is not a live case's, InvalidInput for a bare code.
    """
    who = f"{message.channel}:{message.sender}"
    key = f"{message.channel}:{message.sender}" if message.verified else caller
    if key is None:
        raise ValueError("an unverified message needs the caller's key")  # a bug of ours
    words = message.text.split(None, 1)
    code, rest = [*words, "", ""][:2]
    if message.token and normalise_token(code) != normalise_token(message.token):
        code, rest = message.token, message.text.strip()  # the button carried the code
    elif not looks_like_token(code):
        # Chatter in a channel we read: not a reply, so not a guess either (issue #10).
        raise Ignored("not a reply: it does not start with a code")
    if limiter.blocked(key):
        raise Throttled("too many unknown codes; wait a minute")
    escalation_id = find_by_token(runtime, code)
    if escalation_id is None:
        limiter.miss(key)
        raise NotFound(UNKNOWN_TOKEN)
    if not rest.strip():
        raise InvalidInput("the code needs an answer after it")
    acked = acknowledge_from_chat(
        runtime,
        escalation_id,
        text=rest,
        by=who,
        channel=message.channel,
        message_id=message.message_id or None,
        verified=message.verified,
    )
    if acked is not None:
        return acked
    return answer(
        runtime,
        escalation_id,
        text=rest,
        responder=Responder(who, verified=message.verified),
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
            result = route_reply(runtime, limiter, message)
        except Ignored:
            continue
        except EscalationError as refused:
            results.append(refused)
            if isinstance(refused, NotFound | InvalidInput):
                feedback.tell(runtime, message, str(refused), None)
            continue
        results.append(result)
        feedback.tell(
            runtime,
            message,
            result.message,
            result.escalation_id,
            duplicate=result.outcome is ReplyOutcome.DUPLICATE,
        )
    return results
