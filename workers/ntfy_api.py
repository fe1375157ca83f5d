"""ntfy's JSON publishing for ntfy:// channels, so a message carries its actions, a click
URL and a sequence id.

Publishing again with the same sequence_id updates the notification in place on ntfy 2.16
and later; an older server shows it as a new notification (so the resolution notice that
carries it still arrives). The server, topics and credentials come from the apprise URL.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workers.platform_http import Posted, post_json

CLOUD = "https://ntfy.sh"  # apprise's ntfy:// without a host publishes there
PRIORITY = {"min": 1, "low": 2, "default": 3, "high": 4, "max": 5}  # ntfy's JSON numbers


@dataclass(frozen=True)
class NtfyServer:
    """Where one apprise ntfy:// URL publishes, and how it signs in."""

    base_url: str
    topics: tuple[str, ...]
    headers: Mapping[str, str]
    fields: Mapping[str, Any]  # what the URL asked of every message (?priority=, ?tags=)


def server_of(service: Any) -> NtfyServer | None:
    if type(service).__name__ != "NotifyNtfy":
        return None
    topics = tuple(str(t) for t in getattr(service, "topics", ()) or ())
    if not topics:
        return None
    if getattr(service, "mode", "private") == "cloud":
        base = CLOUD
    else:
        scheme = "https" if getattr(service, "secure", False) else "http"
        port = getattr(service, "port", None)
        base = f"{scheme}://{service.host}" + (f":{port}" if isinstance(port, int) else "")
    headers: dict[str, str] = {}
    token, user = getattr(service, "token", None), getattr(service, "user", None)
    if getattr(service, "auth", None) == "token" and token:
        headers["Authorization"] = f"Bearer {token}"
    elif user:
        pair = f"{user}:{getattr(service, 'password', '') or ''}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
    fields: dict[str, Any] = {}
    priority = PRIORITY.get(str(getattr(service, "priority", "default")))
    if priority is not None and priority != PRIORITY["default"]:
        fields["priority"] = priority
    tags = getattr(service, "_NotifyNtfy__tags", None)  # apprise keeps them name-mangled
    if tags:
        fields["tags"] = [str(tag) for tag in tags]
    return NtfyServer(base, topics, headers, fields)


def publish(server: NtfyServer, message: Mapping[str, Any], *, timeout: float) -> Posted:
    """POST one JSON message to the server root, as ntfy documents for JSON publishing."""
    body = {**server.fields, **message}
    return post_json(
        server.base_url + "/", body, name="ntfy publish", timeout=timeout, headers=server.headers
    )
