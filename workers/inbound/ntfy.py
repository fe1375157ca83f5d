"""ntfy: `http` action buttons that POST `{token} {option}` back to us, and reading that POST.

Formats read in binwiederhier/ntfy: docs/publish.md ("Action buttons", "Send HTTP request")
and server/actions.go (the header parser). ntfy signs nothing and the phone sends no request
id or user identity, so the token in the body is the whole credential.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Mapping, Sequence

from workers.answering import looks_like_token
from workers.inbound.common import InboundMessage, header, leading_token
from workflows.errors import InboundRejected, InvalidInput

MAX_ACTIONS = 3  # ntfy refuses the whole message above this ("only 3 actions allowed")
MAX_BODY = 2048  # bytes; our own buttons send a token and an option label
IDEMPOTENCY_HEADER = "Idempotency-Key"
# A value must be quoted when the simple format would split it (, ;), read a key from it (=),
# or start a quoted value (" '); unquoted values are trimmed, so edge spaces need quotes too.
_NEEDS_QUOTES = re.compile(r"""[,;="']|^\s|\s$""")
_PRINTABLE_ASCII = re.compile(r"[\x20-\x7e]*")
_HTTP_URL = re.compile(r"https?://[\x21-\x7e]+")
_IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,200}")


def answer_actions(links: Sequence[tuple[str, str]], *, token: str) -> str:
    """The `Actions` header value: one http button per (option label, our inbound URL).

    Each button POSTs `{token} {label}` and clears the notification once we answer 2xx. The
    short format is used when every value fits it; otherwise ntfy's JSON array form (the same
    header, ASCII-escaped) so labels with quotes, backslashes or non-ASCII text survive.
    """
    if not 1 <= len(links) <= MAX_ACTIONS:
        raise InvalidInput(f"ntfy allows 1 to {MAX_ACTIONS} action buttons, got {len(links)}")
    if not looks_like_token(token):
        raise InvalidInput("the reply token is not token-shaped")
    actions = []
    for label, url in links:
        if not label.strip():
            raise InvalidInput("an action button needs a label")
        if not _HTTP_URL.fullmatch(url):
            raise InvalidInput("an action URL must be an http(s) URL of printable ASCII")
        actions.append({"label": label, "url": url, "body": f"{token} {label}"})
    short = [_short_action(action) for action in actions]
    if all(part is not None for part in short):
        return "; ".join(part for part in short if part is not None)
    return json.dumps(
        [{"action": "http", **action, "method": "POST", "clear": True} for action in actions],
        ensure_ascii=True,  # header-safe: non-ASCII and control characters become \\u escapes
        separators=(",", ":"),
    )


def _short_action(action: Mapping[str, str]) -> str | None:
    label, url, body = (_short_value(action[key]) for key in ("label", "url", "body"))
    if label is None or url is None or body is None:
        return None
    return f"http, {label}, {url}, method=POST, body={body}, clear=true"


def _short_value(value: str) -> str | None:
    """`value` as the simple format reads it back, or None when only JSON can carry it."""
    if not _PRINTABLE_ASCII.fullmatch(value) or value.endswith("\\"):
        return None  # a trailing backslash would escape the closing quote
    if not _NEEDS_QUOTES.search(value):
        return value
    if '"' not in value:
        return f'"{value}"'
    if "'" not in value:
        return f"'{value}'"
    # Inside quotes the parser ends at the first unescaped quote, then turns \" into ".
    return '"' + value.replace('"', '\\"') + '"'


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
