"""ntfy: reading the POST an `http` action button sends back (`{token} {option}`).

Formats read in binwiederhier/ntfy: docs/publish.md ("Action buttons", "Send HTTP request");
the buttons themselves are laid out in workflows/buttons.py. ntfy signs nothing and the phone
sends no request id or user identity, so the token in the body is the whole credential.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Mapping

from workers.inbound.common import InboundMessage, header, leading_token
from workflows.errors import InboundRejected

MAX_BODY = 2048  # bytes; our own buttons send a token and an option label
IDEMPOTENCY_HEADER = "Idempotency-Key"
_IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,200}")


def parse(
    raw_body: bytes, headers: Mapping[str, str], *, now: float | None = None
) -> InboundMessage:
    """A button's POST as a reply whose text starts with the token; 400 if it is not one.

    message_id is the `Idempotency-Key` header when a publisher set one (ntfy sends none of
    its own), else a hash of the body and the minute it arrived: a retry within the minute is
    a duplicate, and a later press is stopped by the token being single-use.
    """
    if len(raw_body) > MAX_BODY:
        raise InboundRejected(f"body is over {MAX_BODY} bytes")
    try:
        text = raw_body.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise InboundRejected("body is not UTF-8") from None
    if not text:
        raise InboundRejected("empty body")
    token = leading_token(text)
    if token is None:
        raise InboundRejected("body does not start with a reply token")
    key = header(headers, IDEMPOTENCY_HEADER)
    if key is not None and _IDEMPOTENCY_KEY.fullmatch(key):
        message_id = f"ntfy-key-{key}"
    else:
        minute = int((time.time() if now is None else now) // 60)
        digest = hashlib.sha256(f"{minute}\n".encode() + text.encode("utf-8")).hexdigest()
        message_id = f"ntfy-{digest[:32]}"
    return InboundMessage(text, "ntfy", "ntfy", message_id, token=token)
