"""Slack: verify the v0 request signature, then read Events API messages and button presses."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from workers.inbound.common import InboundMessage, header, leading_token, same_secret
from workflows.errors import Ignored, InboundRejected, Rejection

SIGNATURE_HEADER = "X-Slack-Signature"
TIMESTAMP_HEADER = "X-Slack-Request-Timestamp"
RETRY_HEADER = "X-Slack-Retry-Num"  # set on Slack's second and later deliveries of an event
REPLAY_WINDOW = 300  # seconds either side of now, as slack_sdk's SignatureVerifier allows
# A thread reply also "sent to channel" is still the operator typing; other subtypes
# (message_changed, message_deleted, bot_message, channel_join, ...) are not replies.
REPLY_SUBTYPES = frozenset({"thread_broadcast"})
_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_SLACK_ESCAPES = (("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"))


def sign(signing_secret: str, timestamp: str, raw_body: bytes) -> str:
    """Slack's v0 signature: hex HMAC-SHA256 of `v0:{timestamp}:{raw body}`."""
    base = b"v0:" + timestamp.encode("ascii") + b":" + raw_body
    return "v0=" + hmac.new(signing_secret.encode(), base, hashlib.sha256).hexdigest()


def verify(signing_secret: str, headers: Mapping[str, str], raw_body: bytes, *, now: float) -> None:
    """Accept only a request Slack signed within the replay window; else InboundRejected(401)."""
    if not signing_secret:
        raise InboundRejected("no Slack signing secret is configured", why=Rejection.NOT_GENUINE)
    timestamp = header(headers, TIMESTAMP_HEADER)
    signature = header(headers, SIGNATURE_HEADER)
    if not timestamp or not signature:
        missing = TIMESTAMP_HEADER if not timestamp else SIGNATURE_HEADER
        raise InboundRejected(f"missing {missing}", why=Rejection.NOT_GENUINE)
    if not _TIMESTAMP.fullmatch(timestamp):
        raise InboundRejected(f"{TIMESTAMP_HEADER} is not a Unix time", why=Rejection.NOT_GENUINE)
    # Checked before the HMAC: a captured request replayed later fails here, whatever it signs.
    if abs(now - int(timestamp)) > REPLAY_WINDOW:
        raise InboundRejected(
            f"{TIMESTAMP_HEADER} is more than {REPLAY_WINDOW}s from now", why=Rejection.NOT_GENUINE
        )
    if not same_secret(sign(signing_secret, timestamp, raw_body), signature):
        raise InboundRejected(f"{SIGNATURE_HEADER} does not match", why=Rejection.NOT_GENUINE)


def parse(raw_body: bytes, content_type: str) -> InboundMessage | dict[str, str]:
    """A verified request as a reply, or {"challenge": ...} to echo; Ignored for the rest."""
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type == "application/json":
        return _event(_json_object(raw_body, "body"))
    if media_type == "application/x-www-form-urlencoded":
        return _interaction(raw_body)
    raise InboundRejected(f"unexpected content type {media_type or '(none)'}")


def _event(envelope: Mapping[str, Any]) -> InboundMessage | dict[str, str]:
    kind = envelope.get("type")
    if kind == "url_verification":
        challenge = envelope.get("challenge")
        if not isinstance(challenge, str):
            raise InboundRejected("url_verification without a challenge")
        return {"challenge": challenge}
    if kind != "event_callback":
        raise Ignored(f"Slack envelope type {kind!r}")
    event = envelope.get("event")
    if not isinstance(event, Mapping):
        raise InboundRejected("event_callback without an event")
    # app_mention duplicates the message event for the same text: read replies once, here.
    if event.get("type") != "message":
        raise Ignored(f"Slack event type {event.get('type')!r}")
    if event.get("bot_id") or event.get("bot_profile"):
        raise Ignored("a bot's message (perhaps our own)")
    subtype = event.get("subtype")
    if subtype is not None and subtype not in REPLY_SUBTYPES:
        raise Ignored(f"message subtype {subtype!r}")
    user, text = event.get("user"), event.get("text")
    if not isinstance(user, str) or not user:
        raise Ignored("message without a user")
    if not isinstance(text, str) or not text.strip():
        raise Ignored("message without text")
    client_msg_id, ts = event.get("client_msg_id"), event.get("ts")
    if isinstance(client_msg_id, str) and client_msg_id:
        message_id = client_msg_id
    elif isinstance(ts, str) and ts:
        # ts is unique within a channel only, so qualify it.
        message_id = f"{event.get('channel', '')}:{ts}"
    else:
        raise InboundRejected("message without client_msg_id or ts")
    channel = event.get("channel")
    answer_to = {"channel": channel, "user": user} if isinstance(channel, str) else {}
    if isinstance(ts, str) and ts and answer_to:
        answer_to["thread_ts"] = event.get("thread_ts") or ts
    return InboundMessage(
        _unescape(text).strip(), "slack", user, message_id, verified=True, answer_to=answer_to
    )


def _interaction(raw_body: bytes) -> InboundMessage:
    try:
        form = parse_qs(raw_body.decode("utf-8"), keep_blank_values=True)
    except UnicodeDecodeError:
        raise InboundRejected("form body is not UTF-8") from None
    if "payload" not in form:  # slash commands, ssl_check: not replies
        raise Ignored("form post without an interaction payload")
    payload = _json_object(form["payload"][0].encode("utf-8"), "interaction payload")
    if payload.get("type") != "block_actions":
        raise Ignored(f"interaction type {payload.get('type')!r}")
    user = payload.get("user")
    user_id = user.get("id") if isinstance(user, Mapping) else None
    if not isinstance(user_id, str) or not user_id:
        raise InboundRejected("block_actions without user.id")
    actions = payload.get("actions")
    action = actions[0] if isinstance(actions, list) and actions else None
    if not isinstance(action, Mapping):
        raise InboundRejected("block_actions without actions")
    value = action.get("value")
    selected = action.get("selected_option")
    if value is None and isinstance(selected, Mapping):  # a static_select instead of a button
        value = selected.get("value")
    if not isinstance(value, str) or not value.strip():
        raise Ignored("an action with no value (e.g. a link button)")
    # trigger_id is unique per interaction; action_ts only per workspace clock tick.
    message_id = payload.get("trigger_id") or action.get("action_ts")
    if not isinstance(message_id, str) or not message_id:
        raise InboundRejected("block_actions without trigger_id or action_ts")
    text = value.strip()
    answer_to: dict[str, str] = {"user": user_id}
    response_url = payload.get("response_url")
    if isinstance(response_url, str) and response_url.startswith(("https://", "http://")):
        answer_to["response_url"] = response_url  # Slack signed it: where Slack hears us
    container = payload.get("channel")
    if isinstance(container, Mapping) and isinstance(container.get("id"), str):
        answer_to["channel"] = container["id"]
    return InboundMessage(
        text,
        "slack",
        user_id,
        message_id,
        token=leading_token(text),
        verified=True,
        answer_to=answer_to,
    )


def _json_object(raw: bytes, what: str) -> Mapping[str, Any]:
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise InboundRejected(f"{what} is not JSON", why=Rejection.UNREADABLE) from None
    if not isinstance(data, dict):
        raise InboundRejected(f"{what} is not a JSON object")
    return data


def _unescape(text: str) -> str:
    # Slack escapes exactly &, < and > in message text; "&amp;" last so "&amp;lt;" stays "&lt;".
    for escaped, plain in _SLACK_ESCAPES:
        text = text.replace(escaped, plain)
    return text
