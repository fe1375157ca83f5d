"""Inbound adapters: Slack signatures and payloads, Telegram secret/updates/poller, ntfy buttons."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from workers.inbound import ntfy, slack, telegram
from workers.inbound.common import InboundMessage
from workflows.errors import (
    Ignored,
    InboundRejected,
    PermanentError,
    Rejection,
    RetryableError,
)

NOW = 1_700_000_000.0
SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
TOKEN = "K7Q2MX9D4P"  # a reply code's shape (workers/answering.py)
BOT_TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"


# --- Slack: request signatures ----------------------------------------------------------------


def slack_headers(
    body: bytes, *, at: float = NOW, secret: str = SECRET, **drop: bool
) -> dict[str, str]:
    timestamp = str(int(at))
    headers = {
        slack.TIMESTAMP_HEADER: timestamp,
        slack.SIGNATURE_HEADER: slack.sign(secret, timestamp, body),
    }
    return {k: v for k, v in headers.items() if not drop.get(k.replace("-", "_").lower())}


EVENT_BODY = b'{"type":"event_callback","event":{"type":"message","text":"approve"}}'


def test_given_slack_docs_example_when_signing_then_the_known_signature_comes_out() -> None:
    # Given the worked example of Slack's "verifying requests" guide (as slack_sdk tests it)
    body = (
        b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&"
        b"channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&"
        b"command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2F"
        b"commands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&"
        b"trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
    )
    # When it is signed with the example secret and timestamp
    signature = slack.sign(SECRET, "1531420618", body)
    # Then the published signature is reproduced
    assert signature == "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"


@pytest.mark.parametrize(
    ("name", "secret", "headers", "body", "now"),
    [
        ("valid", SECRET, slack_headers(EVENT_BODY), EVENT_BODY, NOW),
        (
            "lower-case header names",
            SECRET,
            {k.lower(): v for k, v in slack_headers(EVENT_BODY).items()},
            EVENT_BODY,
            NOW,
        ),
        ("299 s old", SECRET, slack_headers(EVENT_BODY, at=NOW - 299), EVENT_BODY, NOW),
        ("300 s in the future", SECRET, slack_headers(EVENT_BODY, at=NOW + 300), EVENT_BODY, NOW),
    ],
)
def test_given_a_request_slack_signed_in_the_window_when_verified_then_it_passes(
    name: str, secret: str, headers: dict[str, str], body: bytes, now: float
) -> None:
    slack.verify(secret, headers, body, now=now)  # Then: no exception


@pytest.mark.parametrize(
    ("name", "secret", "headers", "body", "now"),
    [
        (
            "flipped body byte",
            SECRET,
            slack_headers(EVENT_BODY),
            EVENT_BODY.replace(b"approve", b"approvf"),
            NOW,
        ),
        ("wrong secret", "another-secret", slack_headers(EVENT_BODY), EVENT_BODY, NOW),
        (
            "signed with another secret",
            SECRET,
            slack_headers(EVENT_BODY, secret="x"),
            EVENT_BODY,
            NOW,
        ),
        (
            "no signature",
            SECRET,
            slack_headers(EVENT_BODY, x_slack_signature=True),
            EVENT_BODY,
            NOW,
        ),
        (
            "no timestamp",
            SECRET,
            slack_headers(EVENT_BODY, x_slack_request_timestamp=True),
            EVENT_BODY,
            NOW,
        ),
        ("no headers", SECRET, {}, EVENT_BODY, NOW),
        ("stale: 301 s old", SECRET, slack_headers(EVENT_BODY, at=NOW - 301), EVENT_BODY, NOW),
        ("301 s in the future", SECRET, slack_headers(EVENT_BODY, at=NOW + 301), EVENT_BODY, NOW),
        ("replayed an hour later", SECRET, slack_headers(EVENT_BODY), EVENT_BODY, NOW + 3600),
        (
            "timestamp not a number",
            SECRET,
            {**slack_headers(EVENT_BODY), slack.TIMESTAMP_HEADER: "17e8"},
            EVENT_BODY,
            NOW,
        ),
        (
            "non-ASCII signature",
            SECRET,
            {**slack_headers(EVENT_BODY), slack.SIGNATURE_HEADER: "v0=é"},
            EVENT_BODY,
            NOW,
        ),
        ("no secret configured", "", slack_headers(EVENT_BODY, secret=""), EVENT_BODY, NOW),
    ],
)
def test_given_a_request_not_signed_by_slack_in_the_window_when_verified_then_401(
    name: str, secret: str, headers: dict[str, str], body: bytes, now: float
) -> None:
    with pytest.raises(InboundRejected) as refused:
        slack.verify(secret, headers, body, now=now)
    assert refused.value.why is Rejection.NOT_GENUINE  # answered 401
    assert isinstance(refused.value, PermanentError)


def test_given_a_captured_request_when_replayed_after_the_window_then_it_is_refused() -> None:
    # Given a request Slack signed, accepted when it arrived
    headers = slack_headers(EVENT_BODY, at=NOW)
    slack.verify(SECRET, headers, EVENT_BODY, now=NOW + 5)
    # When an eavesdropper sends it again, byte for byte, six minutes later
    # Then the signature still matches but the timestamp does not
    with pytest.raises(InboundRejected, match="more than 300s"):
        slack.verify(SECRET, headers, EVENT_BODY, now=NOW + 360)


# --- Slack: payloads ----------------------------------------------------------------------------


def event_body(**event: Any) -> bytes:
    base = {"type": "message", "channel": "C1", "user": "U1", "text": "approve", "ts": "1.2"}
    envelope = {"type": "event_callback", "event_id": "Ev1", "event": {**base, **event}}
    return json.dumps(envelope).encode()


def interaction_body(payload: Mapping[str, Any]) -> bytes:
    return urlencode({"payload": json.dumps(payload)}).encode()


def block_actions(**action: Any) -> dict[str, Any]:
    button = {"action_id": "a", "type": "button", "value": f"{TOKEN} approve", "action_ts": "9.9"}
    return {
        "type": "block_actions",
        "token": "slack-verification-token-not-ours",
        "user": {"id": "U7", "username": "ops"},
        "trigger_id": "13345224609.738474920.8088930838d88f008e0",
        "actions": [{**button, **action}],
    }


JSON = "application/json"
FORM = "application/x-www-form-urlencoded"


def test_given_url_verification_when_parsed_then_the_challenge_is_returned_to_echo() -> None:
    body = b'{"token":"x","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",'
    body += b'"type":"url_verification"}'
    assert slack.parse(body, JSON) == {
        "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
    }


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (
            {"client_msg_id": "cm-1", "text": f"{TOKEN} approve"},
            InboundMessage(f"{TOKEN} approve", "slack", "U1", "cm-1", verified=True),
        ),
        ({"text": "  deny  "}, InboundMessage("deny", "slack", "U1", "C1:1.2", verified=True)),
        (
            {"text": "approve &amp; ship &lt;now&gt;"},
            InboundMessage("approve & ship <now>", "slack", "U1", "C1:1.2", verified=True),
        ),
        (
            {"subtype": "thread_broadcast", "thread_ts": "1.0"},
            InboundMessage("approve", "slack", "U1", "C1:1.2", verified=True),
        ),
    ],
)
def test_given_an_operator_message_event_when_parsed_then_it_is_a_reply(
    event: dict[str, Any], expected: InboundMessage
) -> None:
    # Then text is a typed reply: token (if any) first, left in the text for the caller
    assert slack.parse(event_body(**event), "application/json; charset=utf-8") == expected


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (event_body(bot_id="B1", subtype="bot_message"), JSON),
        (event_body(bot_id="B1"), JSON),  # our own bot posting as an app
        (event_body(subtype="message_changed"), JSON),
        (event_body(subtype="message_deleted"), JSON),
        (event_body(subtype="channel_join"), JSON),
        (event_body(type="app_mention"), JSON),
        (event_body(text=""), JSON),
        (event_body(user=None), JSON),
        (b'{"type":"app_rate_limited","minute_rate_limited":1518467820}', JSON),
        (interaction_body({**block_actions(), "type": "view_submission"}), FORM),
        (interaction_body(block_actions(value=None)), FORM),  # a link button
        (urlencode({"command": "/escalate", "text": "hi", "user_id": "U1"}).encode(), FORM),
    ],
)
def test_given_a_slack_event_that_is_not_a_reply_when_parsed_then_it_is_ignored(
    body: bytes, content_type: str
) -> None:
    with pytest.raises(Ignored):
        slack.parse(body, content_type)


def test_given_a_button_press_when_parsed_then_its_value_is_the_reply_with_the_token() -> None:
    # Given a block_actions payload for our "approve" button
    body = interaction_body(block_actions())
    # When it is parsed
    message = slack.parse(body, FORM)
    # Then the value is the text, user.id the sender, trigger_id the id, and the token is ours
    # (not the payload's deprecated verification "token")
    assert message == InboundMessage(
        f"{TOKEN} approve",
        "slack",
        "U7",
        "13345224609.738474920.8088930838d88f008e0",
        TOKEN,
        verified=True,
    )


@pytest.mark.parametrize(
    ("payload", "text", "token", "message_id"),
    [
        (block_actions(value="approve"), "approve", None, block_actions()["trigger_id"]),
        ({**block_actions(), "trigger_id": None}, f"{TOKEN} approve", TOKEN, "9.9"),
        (
            block_actions(
                type="static_select", value=None, selected_option={"value": f"{TOKEN} deny"}
            ),
            f"{TOKEN} deny",
            TOKEN,
            block_actions()["trigger_id"],
        ),
    ],
)
def test_given_other_button_shapes_when_parsed_then_text_token_and_id_follow_the_rules(
    payload: dict[str, Any], text: str, token: str | None, message_id: str
) -> None:
    message = slack.parse(interaction_body(payload), FORM)
    assert isinstance(message, InboundMessage)
    assert (message.text, message.token, message.message_id) == (text, token, message_id)


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"{not json", JSON),
        (b"[1, 2]", JSON),
        (b"\xff\xfe", JSON),
        (b'{"type":"url_verification"}', JSON),
        (b'{"type":"event_callback"}', JSON),
        (urlencode({"payload": "{oops"}).encode(), FORM),
        (interaction_body({**block_actions(), "user": {}}), FORM),
        (EVENT_BODY, "text/plain"),
        (EVENT_BODY, ""),
    ],
)
def test_given_a_body_slack_would_not_send_when_parsed_then_400(
    body: bytes, content_type: str
) -> None:
    with pytest.raises(InboundRejected) as refused:
        slack.parse(body, content_type)
    assert refused.value.why is Rejection.UNREADABLE  # answered 400


# --- Telegram: webhook secret and updates -------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "ok"),
    [
        ({telegram.SECRET_HEADER: "s3cr3t-Token_1"}, True),
        ({telegram.SECRET_HEADER.lower(): "s3cr3t-Token_1"}, True),
        ({telegram.SECRET_HEADER: "s3cr3t-Token_2"}, False),
        ({telegram.SECRET_HEADER: "s3cr3t-Token_1 "}, False),
        ({telegram.SECRET_HEADER: "ünïcode"}, False),
        ({telegram.SECRET_HEADER: ""}, False),
        ({}, False),
    ],
)
def test_given_the_webhook_secret_header_when_verified_then_only_ours_passes(
    headers: dict[str, str], ok: bool
) -> None:
    if ok:
        telegram.verify("s3cr3t-Token_1", headers)
        return
    with pytest.raises(InboundRejected) as refused:
        telegram.verify("s3cr3t-Token_1", headers)
    assert refused.value.why is Rejection.NOT_GENUINE  # answered 401


def test_given_no_secret_configured_when_a_webhook_arrives_then_it_fails_closed() -> None:
    with pytest.raises(InboundRejected) as refused:
        telegram.verify("", {telegram.SECRET_HEADER: ""})
    assert refused.value.why is Rejection.NOT_GENUINE  # answered 401


USER = {"id": 42, "is_bot": False, "first_name": "Ada"}
CHAT = {"id": 42, "type": "private"}


def tg_message(
    update_id: int, text: str | None = "approve", *, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    message: dict[str, Any] = {"message_id": 7, "from": USER, "chat": CHAT, "date": 1}
    message.update({"text": text, **(extra or {})})
    return {"update_id": update_id, "message": message}


def tg_press(update_id: int, data: str = f"{TOKEN} approve") -> dict[str, Any]:
    query = {"id": "4382bfdwdsb323b2d9", "from": USER, "chat_instance": "-1", "data": data}
    return {"update_id": update_id, "callback_query": query}


@pytest.mark.parametrize(
    ("update", "expected"),
    [
        (
            tg_message(100, f" {TOKEN} approve "),
            InboundMessage(f"{TOKEN} approve", "telegram", "42", "100", verified=True),
        ),
        (tg_message(101, "deny"), InboundMessage("deny", "telegram", "42", "101", verified=True)),
        (
            tg_press(102),
            InboundMessage(f"{TOKEN} approve", "telegram", "42", "102", TOKEN, verified=True),
        ),
        (
            tg_press(103, "approve"),
            InboundMessage("approve", "telegram", "42", "103", verified=True),
        ),
    ],
)
def test_given_a_message_or_button_press_when_parsed_then_it_is_a_reply(
    update: dict[str, Any], expected: InboundMessage
) -> None:
    assert telegram.parse_update(update) == expected


@pytest.mark.parametrize(
    "update",
    [
        {"update_id": 1, "edited_message": tg_message(1)["message"]},  # edits never decide
        {"update_id": 2, "channel_post": {"message_id": 1, "chat": CHAT, "text": "approve"}},
        {"update_id": 3, "my_chat_member": {"chat": CHAT}},
        {"update_id": 4},
        tg_message(5, None, extra={"sticker": {"file_id": "x"}}),
        tg_message(6, extra={"from": {"id": 9, "is_bot": True, "first_name": "bot"}}),
        tg_message(7, extra={"from": None}),
        tg_press(8, data=""),
    ],
)
def test_given_an_update_that_is_not_a_reply_when_parsed_then_it_is_ignored(
    update: dict[str, Any],
) -> None:
    with pytest.raises(Ignored):
        telegram.parse_update(update)


def test_given_an_update_without_update_id_when_parsed_then_400() -> None:
    with pytest.raises(InboundRejected) as refused:
        telegram.parse_update({"message": tg_message(1)["message"]})
    assert refused.value.why is Rejection.UNREADABLE  # answered 400


# --- Telegram: the getUpdates poller ------------------------------------------------------------
# Telegram is not reachable from this machine, so each test gives a real httpx.Client a
# scripted transport (httpx.MockTransport): the poller's requests and error handling run for
# real; only the far end is a script.

Handler = Callable[[httpx.Request], httpx.Response]


class ScriptedTelegram:
    """Answers getUpdates from a list of scripted steps and records what was asked."""

    def __init__(self, *steps: Handler) -> None:
        self.steps = list(steps)
        self.asked: list[dict[str, Any]] = []
        self.paths: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        self.asked.append(json.loads(request.content))
        return self.steps.pop(0)(request)


def updates(*items: dict[str, Any]) -> Handler:
    return lambda request: httpx.Response(200, json={"ok": True, "result": list(items)})


def failure(status: int, description: str, **extra: Any) -> Handler:
    body = {"ok": False, "error_code": status, "description": description, **extra}
    return lambda request: httpx.Response(status, json=body)


def raising(exc: type[httpx.TransportError], message: str) -> Handler:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exc(message, request=request)

    return handler


@pytest.fixture
def script() -> Iterator[Callable[..., tuple[ScriptedTelegram, telegram.TelegramPoller]]]:
    clients: list[httpx.Client] = []

    def make(*steps: Handler) -> tuple[ScriptedTelegram, telegram.TelegramPoller]:
        far_end = ScriptedTelegram(*steps)
        client = httpx.Client(transport=httpx.MockTransport(far_end))
        clients.append(client)
        return far_end, telegram.TelegramPoller(BOT_TOKEN, client=client, timeout=25)

    yield make
    for client in clients:
        client.close()


def test_given_updates_when_fetched_then_replies_come_back_and_the_offset_advances(
    script: Callable[..., tuple[ScriptedTelegram, telegram.TelegramPoller]],
) -> None:
    # Given Telegram holding a message, an edit and a button press, then nothing
    far_end, poller = script(
        updates(tg_message(10), {"update_id": 11, "edited_message": {}}, tg_press(12)),
        updates(),
    )
    # When the poller fetches from the start
    messages, next_offset = poller.fetch(None)
    # Then the two replies come back, the edit is skipped, and the offset passes all three
    assert [m.message_id for m in messages] == ["10", "12"]
    assert next_offset == 13
    assert far_end.asked[0] == {"timeout": 25, "allowed_updates": ["message", "callback_query"]}
    assert far_end.paths[0] == f"/bot{BOT_TOKEN}/getUpdates"
    # And the next call confirms them by asking from 13, even if the caller passes nothing
    assert poller.fetch(None) == ([], 13)
    assert far_end.asked[1]["offset"] == 13


def test_given_a_stale_offset_or_a_resent_update_when_fetched_then_nothing_comes_twice(
    script: Callable[..., tuple[ScriptedTelegram, telegram.TelegramPoller]],
) -> None:
    # Given a poller that has returned updates 20 and 21
    far_end, poller = script(
        updates(tg_message(20), tg_message(21)),
        updates(tg_message(21), tg_message(22)),  # 21 again: a server hiccup or a race
    )
    first, offset = poller.fetch(20)
    assert [m.message_id for m in first] == ["20", "21"] and offset == 22
    # When the caller fetches again with its old offset
    second, offset = poller.fetch(20)
    # Then the poller asks from its own offset and drops the resent update
    assert far_end.asked[1]["offset"] == 22
    assert [m.message_id for m in second] == ["22"] and offset == 23


@pytest.mark.parametrize(
    ("step", "error", "says"),
    [
        (failure(401, "Unauthorized"), PermanentError, "HTTP 401"),
        (failure(404, "Not Found"), PermanentError, "HTTP 404"),
        (
            failure(
                409,
                "Conflict: can't use getUpdates method while webhook is active; "
                "use deleteWebhook to delete the webhook first",
            ),
            PermanentError,
            "409",
        ),
        (failure(409, "Conflict: terminated by other getUpdates request"), RetryableError, "409"),
        (
            failure(429, "Too Many Requests: retry after 7", parameters={"retry_after": 7}),
            RetryableError,
            "retry after 7s",
        ),
        (failure(502, "Bad Gateway"), RetryableError, "HTTP 502"),
        (failure(400, "Bad Request: wrong allowed_updates"), PermanentError, "HTTP 400"),
        (lambda request: httpx.Response(200, text="<html>proxy</html>"), RetryableError, "JSON"),
        (raising(httpx.ReadTimeout, "timed out"), RetryableError, "no answer within 35s"),
        (raising(httpx.ConnectTimeout, "timed out"), RetryableError, "no answer"),
        (
            raising(httpx.ConnectError, f"cannot reach https://api.telegram.org/bot{BOT_TOKEN}/"),
            RetryableError,
            "ConnectError",
        ),
    ],
)
def test_given_telegram_failing_when_fetched_then_our_error_without_the_bot_token(
    script: Callable[..., tuple[ScriptedTelegram, telegram.TelegramPoller]],
    step: Handler,
    error: type[Exception],
    says: str,
) -> None:
    # Given Telegram (or the network) failing in one way
    _, poller = script(step)
    # When the poller fetches
    with pytest.raises(error) as raised:
        poller.fetch(None)
    # Then the failure is one of ours, says what happened, and never shows the token
    text = str(raised.value)
    assert says in text
    assert BOT_TOKEN not in text and BOT_TOKEN.split(":")[1] not in text
    # and chains no httpx error whose text or request URL would carry it into a traceback
    assert raised.value.__cause__ is None
    assert raised.value.__context__ is None or raised.value.__suppress_context__
    assert poller.offset is None  # nothing was confirmed


def test_given_a_bad_token_when_refused_then_the_message_shows_only_the_masked_token(
    script: Callable[..., tuple[ScriptedTelegram, telegram.TelegramPoller]],
) -> None:
    _, poller = script(failure(401, "Unauthorized"))
    with pytest.raises(PermanentError, match=re.escape("123456789:***")):
        poller.fetch(None)
    assert BOT_TOKEN not in repr(poller)


# --- ntfy: the button's POST ----------------------------------------------------------------------


def test_given_a_button_post_when_parsed_then_it_is_a_reply_starting_with_the_token() -> None:
    message = ntfy.parse(f"{TOKEN} approve".encode(), {}, now=NOW)
    assert (message.text, message.channel, message.sender, message.token) == (
        f"{TOKEN} approve",
        "ntfy",
        "ntfy",
        TOKEN,
    )
    assert re.fullmatch(r"ntfy-[0-9a-f]{32}", message.message_id)
    assert TOKEN not in message.message_id


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        ((b"T approve", {}, NOW), (b"T approve", {}, NOW + 30), True),  # same minute: a retry
        ((b"T approve", {}, NOW), (b"T approve", {}, NOW + 61), False),  # a later press
        ((b"T approve", {}, NOW), (b"T deny", {}, NOW), False),
        (
            (b"T approve", {"idempotency-key": "k1"}, NOW),
            (b"T approve", {"Idempotency-Key": "k1"}, NOW + 600),
            True,
        ),
    ],
)
def test_given_two_posts_when_parsed_then_message_ids_match_only_for_the_same_delivery(
    first: tuple[bytes, dict[str, str], float],
    second: tuple[bytes, dict[str, str], float],
    same: bool,
) -> None:
    def message_id(body: bytes, headers: dict[str, str], now: float) -> str:
        return ntfy.parse(body.replace(b"T", TOKEN.encode()), headers, now=now).message_id

    assert (message_id(*first) == message_id(*second)) is same


@pytest.mark.parametrize(
    "body",
    [b"", b"   ", b"approve", b"short approve", b"\xff\xfe", TOKEN.encode() + b" " + b"x" * 3000],
)
def test_given_a_post_that_is_not_our_button_when_parsed_then_400(body: bytes) -> None:
    with pytest.raises(InboundRejected) as refused:
        ntfy.parse(body, {}, now=NOW)
    assert refused.value.why is Rejection.UNREADABLE  # answered 400
