"""Slack's Web API for a slack:// channel configured with a bot token (xoxb-...).

A bot-token channel is sent natively (chat.postMessage), so its message carries Block Kit
buttons and can be updated when the case ends (chat.update); a webhook channel stays with
apprise. The base URL is a setting (ESCALATE_SLACK_API_URL), so tests reach a local sink.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workers.platform_http import Posted, post_json
from workflows.buttons import slack_text


@dataclass(frozen=True)
class SlackBot:
    """The bot token and the channels one apprise slack:// URL names."""

    token: str
    channels: tuple[str, ...]


def bot_of(service: Any) -> SlackBot | None:
    """The bot behind an apprise Slack service in bot mode; None for a webhook URL."""
    if type(service).__name__ != "NotifySlack" or getattr(service, "mode", None) != "bot":
        return None
    token = getattr(service, "access_token", None)
    channels = tuple(str(c).lstrip("#") for c in getattr(service, "channels", ()) or ())
    return SlackBot(token, channels) if token and channels else None


def call(
    api_url: str, token: str, method: str, body: Mapping[str, Any], *, timeout: float
) -> Posted:
    """One Web API method with the bot token; a 200 with ok=false is a failure."""
    return post_json(
        f"{api_url.rstrip('/')}/{method}",
        body,
        name=f"slack {method}",
        timeout=timeout,
        headers={"Authorization": f"Bearer {token}"},
    )


def respond(response_url: str, text: str, *, timeout: float) -> Posted:
    """Tell the person who pressed a button, only them (an ephemeral message), through the
    interaction's response_url; the original message stays as it is."""
    body = {"response_type": "ephemeral", "replace_original": False, **slack_text(text)}
    return post_json(response_url, body, name="slack response_url", timeout=timeout)
