"""How a channel is read, from its configured URL's scheme: that decides a message's form."""

from __future__ import annotations

from workflows.stage_results import Reading

# A reply on the channel reaches us (SPEC §4: Slack and Telegram inbound, bridges' text).
_CHAT = frozenset({"slack", "tgram", "mmost", "mmosts"})
_BUTTONS = frozenset({"ntfy", "ntfys"})  # answer buttons (ntfy actions), no typed reply
_MAIL = frozenset(
    {"mailto", "mailtos", "json", "jsons", "xml", "xmls", "form", "forms"}  # read at a desk
)


def reading_of(url: str) -> Reading:
    """The form a channel gets; push (short, no inbound path) when the scheme is unknown."""
    scheme = url.split("://", 1)[0].lower()
    if scheme in _CHAT:
        return Reading.CHAT
    if scheme in _BUTTONS:
        return Reading.BUTTONS
    if scheme in _MAIL:
        return Reading.MAIL
    return Reading.PUSH


def takes_html(url: str) -> bool:
    """Email gets the HTML twin (and its text part from it); webhooks get the text."""
    return url.split("://", 1)[0].lower() in ("mailto", "mailtos")


def notify_type_for(severity: str) -> str:
    """apprise's notify type (its values, without importing it): louder for worse."""
    return {"critical": "failure", "high": "warning"}.get(severity, "info")
