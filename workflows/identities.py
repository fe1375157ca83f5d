"""Responder identities: how they are compared, and the decider patterns that name them."""

from __future__ import annotations

from dataclasses import dataclass

from workflows.errors import InvalidInput

ANY_LINK = "link:*"
LINK_VIA = "link via "
PATTERN_FORMS = "e.g. slack:U123, telegram:*, api:operator, link via ops or link:*"


# A token's holder is one person on either face that takes the token (API and dashboard).
TOKEN_FACES = ("api:", "dashboard:")


@dataclass(frozen=True)
class Responder:
    """Who answered, as the server knows it: never a name the caller typed.

    `verified`: the server itself authenticated `identity` (a platform-signed user, a bearer
    token and the name bound to it, a dashboard session). Links, ntfy buttons and chat
    bridges carry only a code or a reported name: they are unverified. `note` is a name the
    caller gave; it is recorded beside the reply and decides nothing.
    """

    identity: str
    verified: bool = False
    note: str | None = None


def holder_key(identity: str) -> str:
    """identity_key, with a token's two faces (api:, dashboard:) read as one holder."""
    key = identity_key(identity)
    for face in TOKEN_FACES:
        if key.startswith(face):
            return "token:" + key.removeprefix(face)
    return key


def identity_key(identity: str) -> str:
    """The form identities are compared in: trimmed, single-spaced, case-insensitive."""
    return " ".join(identity.split()).casefold()


def check_pattern(text: str) -> str:
    """A decider pattern, trimmed; InvalidInput says what is wrong with a malformed one."""
    # Forms: channel:id (exact), channel:* (anyone on that channel), link via <tag> (a link
    # sent to that apprise tag) and link:* (any link). Only the link form has spaces, because
    # that is how a link's answer is recorded ("link via ops"); a spaced id is a typo.
    pattern = text.strip()
    if not pattern:
        raise InvalidInput(f"must be an identity, got an empty value ({PATTERN_FORMS})")
    if "://" in pattern:
        raise InvalidInput(f"{pattern!r} is a URL, not an identity ({PATTERN_FORMS})")
    words = pattern.split()
    if words[0].casefold() == "link" and len(words) > 1:
        return _check_link(words)
    if len(words) > 1:
        raise InvalidInput(f"{pattern!r} has a space; only 'link via <tag>' may ({PATTERN_FORMS})")
    if pattern == "*":
        raise InvalidInput(
            "'*' would let anyone decide: leave deciders out for that, "
            "or name a channel (e.g. slack:*)"
        )
    channel, colon, who = pattern.partition(":")
    if not colon:
        raise InvalidInput(
            f"{pattern!r} has no channel; write channel:id (e.g. slack:{pattern}, "
            f"cli:{pattern}) or channel:*"
        )
    if not channel:
        raise InvalidInput(f"{pattern!r} has no channel before the colon ({PATTERN_FORMS})")
    if not who:
        raise InvalidInput(
            f"{pattern!r} has no id after the colon (write {channel}:ID or {channel}:*)"
        )
    if "*" in channel:
        raise InvalidInput(f"{pattern!r}: name the channel; only the id may be * (e.g. slack:*)")
    if "*" in who and who != "*":
        raise InvalidInput(f"{pattern!r}: * stands for a whole id only (write {channel}:*)")
    if channel.casefold() == "link" and who != "*":
        raise InvalidInput(
            f"{pattern!r} never matches: a link answers as 'link via <tag>' "
            f"(write link via {who}, or link:* for any link)"
        )
    return pattern


def _check_link(words: list[str]) -> str:
    """Check `link via <tag>`, the one pattern with spaces."""
    written = " ".join(words)
    if len(words) != 3 or words[1].casefold() != "via" or "," in words[2]:
        raise InvalidInput(f"{written!r} must be 'link via <tag>' with one apprise tag")
    if words[2] == "*":
        raise InvalidInput(f"{written!r}: write link:* for a link sent to any tag")
    return written


def matches(pattern: str, responder: str) -> bool:
    """Whether a responder identity is one that a decider pattern names."""
    want, who = identity_key(pattern), identity_key(responder)
    if want.startswith(LINK_VIA):
        return who == want
    if want == ANY_LINK:
        return who.startswith(LINK_VIA)
    channel, _, wanted_id = want.partition(":")
    if wanted_id == "*":
        their_channel, colon, their_id = who.partition(":")
        return bool(colon and their_id) and their_channel == channel
    return who == want


def is_system(responder: str) -> bool:
    """The service itself deciding (a timeout default), recorded as `system ...`."""
    who = identity_key(responder)
    return who == "system" or who.startswith(("system ", "system:"))
