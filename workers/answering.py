"""The ways back to a case: a correlation token for chat replies and signed one-click links.

Neither is stored in clear: the token is derived from a server key and the case id (only
its sha256 is kept, for lookup), and links are signed and time-limited with itsdangerous.
Both are written into a notification at send time, so the outbox holds markers only.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer

from workflows.errors import LinkRefused
from workflows.pipeline_state import REPLY_TOKEN_SHAPE

# Crockford's base32 without I, L, O, U: easy to read out and to type on a phone.
_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
TOKEN_LENGTH = 10  # 50 bits: see README, "Answering from a channel", for the guessing odds
LINK_SALT = "escalate.answer-link"
_LOOKALIKES = str.maketrans("OIL", "011")


def reply_token(key: str, escalation_id: str) -> str:
    """The case's correlation token, e.g. 'K7Q2MX9D4P'; the same every time it is derived."""
    digest = hmac.new(key.encode(), f"reply:{escalation_id}".encode(), hashlib.sha256).digest()
    number = int.from_bytes(digest[:8], "big")
    return "".join(_ALPHABET[(number >> (5 * i)) & 31] for i in range(TOKEN_LENGTH))


def case_token(key: str, escalation_id: str, pipeline: Mapping[str, Any] | None) -> str:
    """The code a reply starts with: a pipeline's own token when it keeps one (lullabeast's
    escalation_reply_token), else the derived one."""
    own = (pipeline or {}).get("reply_token")
    return own if isinstance(own, str) and own else reply_token(key, escalation_id)


def token_hash(key: str, token: str) -> str:
    """What the database keeps: a keyed hash of the normalised code. Keyed, because a
    50-bit code's plain sha256 could be brute-forced offline from a stolen database."""
    normalised = normalise_token(token).encode()
    return hmac.new(key.encode(), b"lookup:" + normalised, hashlib.sha256).hexdigest()


def normalise_token(text: str) -> str:
    """Typed tokens forgive case, spaces and dashes, and read O as 0 and I/L as 1."""
    cleaned = "".join(ch for ch in text.upper() if ch.isalnum())
    return cleaned.translate(_LOOKALIKES)


def looks_like_token(word: str) -> bool:
    """Our 10-character code, or a pipeline's own `<entry>.<hex>` token."""
    if REPLY_TOKEN_SHAPE.fullmatch(word.strip()):
        return True
    token = normalise_token(word)
    return len(token) == TOKEN_LENGTH and all(ch in _ALPHABET for ch in token)


@dataclass(frozen=True)
class LinkClaim:
    """What a valid answer link says: which case, which option, sent to which channel."""

    escalation_id: str
    option: str
    via: str


@lru_cache(maxsize=8)  # one per key; building it derives the signing key each time
def _serializer(key: str) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(key, salt=LINK_SALT)


def sign_link(key: str, escalation_id: str, option: str, via: str) -> str:
    return _serializer(key).dumps({"e": escalation_id, "o": option, "v": via})


def read_link(key: str, signed: str, *, max_age: float) -> LinkClaim:
    try:
        data: Any = _serializer(key).loads(signed, max_age=int(max_age))
    except (SignatureExpired, BadSignature):
        raise LinkRefused("this answer link is not valid or has expired") from None
    return LinkClaim(str(data["e"]), str(data["o"]), str(data["v"]))


def answer_links(
    key: str, public_url: str, escalation_id: str, options: Sequence[str], via: str
) -> Mapping[str, str]:
    """One signed link per option, for one channel's copy of a notification."""
    return {
        option: f"{public_url}/a/{sign_link(key, escalation_id, option, via)}" for option in options
    }
