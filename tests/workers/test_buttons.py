"""Answer where you read (issue #10, items 2-4): Slack, Telegram and ntfy pages carry answer
buttons in each platform's documented shape, a press comes back through the platform's own
verified path and is judged like any reply, the person who pressed is told in that channel,
and the original message is updated when the case ends. A local peer plays the three APIs
(tests/support/platforms.py); the service runs for real (Celery worker, beat, SQLite).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from models.settings import Settings
from tests.support.platforms import Call, Platforms, platform_peer
from tests.support.services import REDIS, REDIS_URL, fresh_postgres_database, require
from tests.support.sink import HttpSink
from tests.workers.conftest import DESIGN, Harness
from tests.workers.test_channel_forms import BUTTONS_MARKER
from workers.inbound.slack import sign
from workflows.examples import valid_packet

SLACK_SECRET, TELEGRAM_SECRET = "slack-signing-secret-btn", "telegram-secret-btn"
SLACK_BOT = "xoxb-1234-5678-4ddbc191d40ee098cbaae6f3523ada2d"
TELEGRAM_BOT = "123456789:AAbbccddeeffgghhiijjkkllmmnnoopp_qq"
OPTIONS = [
    {"label": "approve", "description": "Load the rows with a placeholder."},
    {"label": "wipe target", "description": "Drop the target table.", "destructive": True},
    {"label": "stop", "description": "Halt the run."},
]


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """SQLite, or (for the one test that asks) Redis + PostgreSQL."""
    if getattr(request, "param", "sqlite") == "sqlite":
        yield {}
        return
    require(REDIS, "Redis")
    with fresh_postgres_database() as url:
        yield {"database_url": url, "broker_url": REDIS_URL}


@pytest.fixture
def peer() -> Iterator[Platforms]:
    with platform_peer() as started:
        yield started


@pytest.fixture
def settings(tmp_path: Path, sink: HttpSink, peer: Platforms, backend: dict[str, Any]) -> Settings:
    """`ops` is one Slack bot channel, one Telegram chat and one ntfy topic, on the peer;
    windows long enough that nothing defaults while a test presses buttons."""
    host = peer.url.removeprefix("http://")
    design = DESIGN.read_text(encoding="utf-8").replace(
        "medium:   {window: 1s, timeout: 2s, recipient: {primary: ops, copies: [ops-log]}",
        "medium:   {window: 60s, timeout: 120s, recipient: ops",
    )
    design = design.replace(  # low stays quick: its default updates the pages
        "recipient: ops-low, waiting_behavior: safe_subset",
        "recipient: ops, waiting_behavior: safe_subset",
    )
    (tmp_path / "design.yaml").write_text(design, encoding="utf-8")
    urls = [
        f"slack://{SLACK_BOT}/C0TEST",
        f"tgram://{TELEGRAM_BOT}/4242",
        f"ntfy://{host}/escalate",
    ]
    lines = ["urls:"] + [f"  - {url}:\n      tag: ops" for url in urls]
    for tag in ("ops-log", "oncall", "pager", "ops-low"):
        lines.append(f"  - json://{sink.url.removeprefix('http://')}/{tag}:\n      tag: {tag}")
    config = tmp_path / "apprise.yaml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Settings(
        home=tmp_path / "home",
        design=tmp_path / "design.yaml",
        apprise_config=config,
        queue=f"test-{secrets.token_hex(4)}",
        sweep_interval=0.25,
        delivery_tries=1,
        delivery_backoff=0.05,
        send_timeout=3.0,
        public_url="https://escalate.example",
        slack_api_url=f"{peer.url}/api",
        telegram_api_url=peer.url,
        slack_signing_secret=SLACK_SECRET,
        telegram_secret=TELEGRAM_SECRET,
        api_tokens="operator:op-token",
        **backend,
    )


@pytest.fixture
def api(service: Harness) -> Iterator[TestClient]:
    with TestClient(create_app(service.settings)) as client:
        yield client


def paged(service: Harness, peer: Platforms, packet_id: str, **changes: Any) -> tuple[str, str]:
    """Raise a case; wait until Slack, Telegram and ntfy each have its page: (id, code)."""
    packet = {**valid_packet(), "packet_id": packet_id, **changes.pop("packet", {})}
    service.send(packet, options=changes.pop("options", OPTIONS), **changes)
    case = service.case("run-8842", packet_id)
    peer.wait(lambda calls: {"chat.postMessage", "sendMessage", "publish"} <= _methods(calls))
    service.in_state(case.id, "awaiting")
    [slack] = peer.of("chat.postMessage")
    code = re.search(r" · ([0-9A-Z]{10})\n", slack.body["text"])
    assert code, slack.body["text"]
    return case.id, code.group(1)


def _methods(calls: list[Call]) -> set[str]:
    return {c.method for c in calls}


def slack_press(api: TestClient, value: str, *, response_url: str, user: str = "U42") -> Any:
    payload = {
        "type": "block_actions",
        "user": {"id": user},
        "trigger_id": f"trigger-{secrets.token_hex(4)}",
        "response_url": response_url,
        "channel": {"id": "C0TEST"},
        "container": {"type": "message", "message_ts": "100.000200"},
        "actions": [{"action_id": "escalate-answer-0", "value": value, "action_ts": "1.2"}],
    }
    body = urlencode({"payload": json.dumps(payload)}).encode()
    stamp = str(int(time.time()))
    return api.post(
        "/v1/inbound/slack",
        content=body,
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": sign(SLACK_SECRET, stamp, body),
        },
    )


def test_each_platform_gets_its_documented_buttons(service: Harness, peer: Platforms) -> None:
    # Given a case with a safe option, a destructive one and a safe stop
    case_id, code = paged(service, peer, "esc-btn-shapes")
    links = "https://escalate.example/a/"
    case_url = f"https://escalate.example/dashboard/cases/{case_id}"
    # Then Slack's chat.postMessage carries the bot token and Block Kit buttons
    [slack] = peer.of("chat.postMessage")
    assert slack.headers["Authorization"] == f"Bearer {SLACK_BOT}"
    assert slack.body["channel"] == "C0TEST"
    section, actions = slack.body["blocks"]
    assert section["type"] == "section" and section["text"]["type"] == "plain_text"
    assert "Answer: tap a button, or reply here with the code" in section["text"]["text"]
    assert actions["type"] == "actions"
    buttons = {e["text"]["text"]: e for e in actions["elements"]}
    assert all(e["type"] == "button" and e["action_id"] for e in actions["elements"])
    assert [e["text"]["text"] for e in actions["elements"]] == [
        "approve",
        "stop",
        "wipe target",
        "Ack: I'm on it",
        "Open the case",
    ]  # safe options first
    assert buttons["approve"]["value"] == f"{code} approve"
    assert buttons["stop"]["value"] == f"{code} stop"
    assert buttons["Ack: I'm on it"]["value"] == f"{code} ack"
    # a destructive option opens its confirm page, it never decides in one tap
    assert "value" not in buttons["wipe target"] and buttons["wipe target"]["url"].startswith(links)
    assert buttons["wipe target"]["style"] == "danger"
    assert buttons["Open the case"]["url"] == case_url
    # Telegram's sendMessage carries an inline keyboard whose callback_data fits 64 bytes
    [telegram] = peer.of("sendMessage")
    assert telegram.path == f"/bot{TELEGRAM_BOT}/sendMessage"
    assert telegram.body["chat_id"] == "4242" and "parse_mode" not in telegram.body
    rows = telegram.body["reply_markup"]["inline_keyboard"]
    keys = [button for row in rows for button in row]
    assert [k["text"] for k in keys] == [
        "approve",
        "stop",
        "wipe target",
        "Ack: I'm on it",
        "Open the case",
    ]
    assert keys[0]["callback_data"] == f"{code} approve"
    assert all(len(k["callback_data"].encode()) <= 64 for k in keys if "callback_data" in k)
    assert "callback_data" not in keys[2] and keys[2]["url"].startswith(links)
    # ntfy's JSON publish: at most 3 actions, safe ones first, a click that opens the case
    [ntfy] = peer.of("publish")
    assert ntfy.body["topic"] == "escalate" and ntfy.body["click"] == case_url
    assert ntfy.body["sequence_id"] == f"escalate-{case_id}"
    assert [(a["action"], a["label"]) for a in ntfy.body["actions"]] == [
        ("http", "approve"),
        ("http", "stop"),
        ("view", "wipe target"),
    ]
    http = ntfy.body["actions"][0]
    assert http["method"] == "POST" and http["body"] == f"{code} approve"
    assert http["url"] == "https://escalate.example/v1/inbound/ntfy"
    assert ntfy.body["actions"][2]["url"].startswith(links)
    if target := os.environ.get("ESCALATE_CHANNELS_DOC"):  # docs/CHANNELS.md, as received
        capture(Path(target), slack, telegram, ntfy)


def capture(path: Path, slack: Call, telegram: Call, ntfy: Call) -> None:
    """Replace the button section of docs/CHANNELS.md with what the peer received."""
    fence = "```"
    masked = telegram.path.replace(TELEGRAM_BOT, "<bot token>")

    def shown(call: Call) -> str:
        return json.dumps(call.body, indent=2, ensure_ascii=False)

    parts = [
        BUTTONS_MARKER,
        "",
        "## Chat with buttons: Slack with a bot token, Telegram, ntfy",
        "",
        "Captured by `tests/workers/test_buttons.py` (same variable) from a local peer that "
        "answers as Slack's Web API, Telegram's Bot API and ntfy do. The case offers `approve`, "
        "a destructive `wipe target` and `stop`: safe options answer in place, the "
        "destructive one opens its confirm page, and Ack records who is on it. When the case "
        "ends the page is updated (`chat.update`, `editMessageText` with an empty keyboard, "
        "an ntfy publish with the same `sequence_id`) and the short notice follows.",
        "",
        "### Slack: `POST /api/chat.postMessage` (Authorization: Bearer <bot token>)",
        "",
        f"{fence}json",
        shown(slack),
        fence,
        "",
        f"### Telegram: `POST {masked}`",
        "",
        f"{fence}json",
        shown(telegram),
        fence,
        "",
        "### ntfy: `POST /` (JSON publishing)",
        "",
        f"{fence}json",
        shown(ntfy),
        fence,
        "",
    ]
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    head = old.partition(BUTTONS_MARKER)[0]
    ending = "".join(old.partition(ENDING_MARKER)[1:])  # written by the default's test
    text = head.rstrip("\n") + "\n\n" + "\n".join(parts)
    path.write_text(text + ("\n" + ending if ending else ""), encoding="utf-8")


ENDING_MARKER = "<!-- when the case ends: tests/workers/test_buttons.py -->"


def capture_ending(path: Path, update: Call, edit: Call, notice: Call) -> None:
    """Replace the 'when the case ends' part of docs/CHANNELS.md with what the peer got."""
    fence = "```"

    def shown(call: Call) -> list[str]:
        return [f"{fence}json", json.dumps(call.body, indent=2, ensure_ascii=False), fence, ""]

    parts = [
        ENDING_MARKER,
        "",
        "### When the case ends (here: nobody answered, the default applied)",
        "",
        "Slack `chat.update` of the page (its buttons gone):",
        "",
        *shown(update),
        "Telegram `editMessageText` of the page (an empty keyboard):",
        "",
        *shown(edit),
        "ntfy: the notice, published with the page's `sequence_id` (it replaces the page on "
        "ntfy 2.16 and later):",
        "",
        *shown(notice),
        'The person who answered is told too: Slack `{"response_type": "ephemeral", '
        '"replace_original": false, "text": "Decided: approve. (case …)", "mrkdwn": false}` '
        "to the press's `response_url` (or `chat.postEphemeral` for a typed reply), Telegram "
        '`answerCallbackQuery` `{"callback_query_id": …, "text": "Decided: stop. (case …)"}` '
        "(or a `sendMessage` with `reply_parameters` for a typed one), ntfy a publish titled "
        "`[escalate] Your answer`.",
        "",
    ]
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    head = old.partition(ENDING_MARKER)[0]
    path.write_text(head.rstrip("\n") + "\n\n" + "\n".join(parts), encoding="utf-8")


@pytest.mark.parametrize("backend", ["sqlite", "redis-postgres"], indirect=True)
def test_a_slack_button_decides_tells_the_presser_and_updates_the_message(
    service: Harness, peer: Platforms, api: TestClient
) -> None:
    # Given a case paged to Slack with buttons
    case_id, _code = paged(service, peer, "esc-btn-slack")
    [page] = peer.of("chat.postMessage")
    value = next(
        e["value"]
        for e in page.body["blocks"][1]["elements"]
        if e.get("value", "").endswith("approve")
    )
    # A press that Slack did not sign is refused
    stamp = str(int(time.time()))
    forged = api.post(
        "/v1/inbound/slack",
        content=b"payload=%7B%7D",
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": "v0=00",
        },
    )
    assert forged.status_code == 401
    # When the operator presses "approve" (Slack posts the signed interaction payload)
    response_url = f"{peer.url}/slack-response/press-1"
    pressed = slack_press(api, value, response_url=response_url)
    # Then the same judgement decides the case, as slack:U42
    assert pressed.status_code == 200 and pressed.json()["outcome"] == "decided"
    [decision] = service.decisions(case_id)
    assert decision.option == "approve" and decision.decided_by == "slack:U42"
    # the presser is told, only them, through the response_url
    [told] = peer.wait_for("press-1")
    assert told.body["response_type"] == "ephemeral" and told.body["replace_original"] is False
    assert told.body["text"] == f"Decided: approve. (case {case_id})"
    # and when the case closes, the original message loses its buttons and shows the outcome
    service.in_state(case_id, "closed")
    [update] = peer.wait_for("chat.update")
    assert update.body["channel"] == "C0TEST" and update.body["ts"] == page_ts(peer)
    assert [b["type"] for b in update.body["blocks"]] == ["section"]
    assert "Decided: approve by slack:U42" in update.body["text"]
    assert "Nothing more is needed." in update.body["text"]
    # with the short notice in the message's thread
    notices = peer.wait_for("chat.postMessage", 2)
    assert notices[1].body["thread_ts"] == page_ts(peer)
    assert notices[1].body["text"].startswith("[escalate] Decided: approve")
    # A second press is told what was decided, by whom, and changes nothing
    late = slack_press(api, value, response_url=f"{peer.url}/slack-response/press-2", user="U7")
    # (a button press is answered 200 whatever became of it: Slack shows other statuses as
    # an error to the presser, who is told through the response_url instead)
    assert late.status_code == 200 and late.json()["outcome"] == "superseded"
    [second] = peer.wait_for("press-2")
    assert second.body["text"].startswith("Already decided: approve by slack:U42")
    assert len(service.decisions(case_id)) == 1


def page_ts(peer: Platforms) -> str:
    return str(peer.of("chat.postMessage")[0].answer["ts"])


def test_a_telegram_button_decides_answers_the_query_and_removes_the_keyboard(
    service: Harness, peer: Platforms, api: TestClient
) -> None:
    # Given a case paged to Telegram with an inline keyboard
    case_id, code = paged(service, peer, "esc-btn-tg")
    [page] = peer.of("sendMessage")
    stop = page.body["reply_markup"]["inline_keyboard"][1][0]
    assert stop["callback_data"] == f"{code} stop"
    update = {
        "update_id": 9001,
        "callback_query": {
            "id": "cbq-1",
            "from": {"id": 555, "is_bot": False},
            "message": {"message_id": 100, "chat": {"id": 4242}},
            "data": stop["callback_data"],
        },
    }
    # A press without the webhook's secret token is refused
    assert api.post("/v1/inbound/telegram", json=update).status_code == 401
    # When the operator presses "stop"
    headers = {"X-Telegram-Bot-Api-Secret-Token": TELEGRAM_SECRET}
    pressed = api.post("/v1/inbound/telegram", json=update, headers=headers)
    # Then the case is decided by the Telegram user, and the press is answered
    assert pressed.status_code == 200 and pressed.json()["understood"] == "stop"
    assert service.decisions(case_id)[0].decided_by == "telegram:555"
    [answered] = peer.wait_for("answerCallbackQuery")
    assert answered.body["callback_query_id"] == "cbq-1"
    assert answered.body["text"] == f"Decided: stop. (case {case_id})"
    # and the original message shows the outcome with its keyboard gone
    service.in_state(case_id, "closed")
    [edited] = peer.wait_for("editMessageText")
    sent = page.answer["result"]
    assert edited.body["chat_id"] == sent["chat"]["id"] == "4242"
    assert edited.body["message_id"] == sent["message_id"]
    assert edited.body["reply_markup"] == {"inline_keyboard": []}
    assert "Decided: stop by telegram:555" in edited.body["text"]
    notice = peer.wait_for("sendMessage", 2)[1]
    assert notice.body["reply_parameters"]["message_id"] == sent["message_id"]
    # Telegram's retry of the same update changes nothing and is not answered twice
    again = api.post("/v1/inbound/telegram", json=update, headers=headers)
    assert again.json()["outcome"] == "duplicate"
    assert len(peer.of("answerCallbackQuery")) == 1


def test_an_ntfy_button_decides_and_the_notice_replaces_the_page(
    service: Harness, peer: Platforms, api: TestClient
) -> None:
    # Given a case paged to ntfy
    case_id, _code = paged(service, peer, "esc-btn-ntfy")
    [page] = peer.of("publish")
    approve = page.body["actions"][0]
    # When the phone sends the http action's request, as ntfy documents it
    pressed = api.post("/v1/inbound/ntfy", content=approve["body"].encode())
    # Then it decides (an unverified path, on a case with no owner), and the topic is told
    assert pressed.status_code == 200 and pressed.json()["outcome"] == "decided"
    publishes = peer.wait(
        lambda calls: any("Your answer" in str(c.body.get("title")) for c in calls if c.path == "/")
    )
    told = next(c for c in publishes if "Your answer" in str(c.body.get("title")))
    assert told.body["message"] == f"Decided: approve. (case {case_id})"
    # and the notice is published with the page's sequence id, without buttons
    service.in_state(case_id, "closed")

    def settled_notices(calls: list[Call]) -> list[Call]:
        return [
            c
            for c in calls
            if c.path == "/" and str(c.body["title"]).startswith("[escalate] Decided:")
        ]

    [settled] = settled_notices(peer.wait(lambda calls: bool(settled_notices(calls))))
    assert settled.body["sequence_id"] == page.body["sequence_id"] == f"escalate-{case_id}"
    assert "actions" not in settled.body and "Nothing more is needed." in settled.body["message"]


def test_an_ntfy_button_cannot_approve_an_owned_harm_risk_case(
    service: Harness, peer: Platforms, api: TestClient
) -> None:
    # Given a harm_risk case whose owner is a Slack user: ntfy cannot tell who pressed
    case_id, code = paged(
        service,
        peer,
        "esc-btn-harm",
        packet={"trigger_type": "harm_risk"},
        owner="slack:U42",
    )
    # When "approve" is pressed on ntfy
    pressed = api.post("/v1/inbound/ntfy", content=f"{code} approve".encode())
    # Then it is refused, said back on the topic, and the case stays open
    assert pressed.status_code == 403 and pressed.json()["outcome"] == "not_allowed"
    peer.wait(lambda calls: any("Not decided" in str(c.body) for c in calls if c.path == "/"))
    assert service.decisions(case_id) == []
    # while a verified Slack user who is not the owner may approve it
    pressed = slack_press(api, f"{code} approve", response_url=f"{peer.url}/r/3", user="U9")
    assert pressed.json()["outcome"] == "decided"


def test_ack_from_chat_or_a_button_records_who_is_on_it_and_decides_nothing(
    service: Harness, peer: Platforms, api: TestClient
) -> None:
    # Given a paged case
    case_id, code = paged(service, peer, "esc-btn-ack")
    # When one operator types "<code> on it, checking totals" in Slack
    event = {
        "type": "event_callback",
        "event": {
            "type": "message",
            "user": "U42",
            "client_msg_id": "ack-1",
            "channel": "C0TEST",
            "ts": "200.1",
            "text": f"{code} on it, checking totals",
        },
    }
    body = json.dumps(event).encode()
    stamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": sign(SLACK_SECRET, stamp, body),
    }
    typed = api.post("/v1/inbound/slack", content=body, headers=headers)
    # and another presses Ack on Telegram
    ack = next(
        k
        for row in peer.of("sendMessage")[0].body["reply_markup"]["inline_keyboard"]
        for k in row
        if k.get("callback_data", "").endswith(" ack")
    )
    update = {
        "update_id": 9100,
        "callback_query": {
            "id": "cbq-ack",
            "from": {"id": 777, "is_bot": False},
            "message": {"message_id": 100, "chat": {"id": 4242}},
            "data": ack["callback_data"],
        },
    }
    tg_headers = {"X-Telegram-Bot-Api-Secret-Token": TELEGRAM_SECRET}
    pressed = api.post("/v1/inbound/telegram", json=update, headers=tg_headers)
    # Then both are recorded acknowledgements, with who and why, and nothing is decided
    assert typed.status_code == 200 and typed.json()["outcome"] == "acknowledged"
    assert pressed.status_code == 200 and pressed.json()["outcome"] == "acknowledged"
    acks = [e.detail for e in service.events(case_id, "acknowledged")]
    assert [(a["by"], a["reason"]) for a in acks] == [
        ("slack:U42", "checking totals"),
        ("telegram:777", "said so on telegram"),
    ]
    assert all(a["verified"] for a in acks)  # both platforms vouched for who it was
    assert service.decisions(case_id) == []
    assert service.in_state(case_id, "awaiting")
    # each is told it was recorded, in their own channel
    [ephemeral] = peer.wait_for("chat.postEphemeral")
    assert ephemeral.body["user"] == "U42" and ephemeral.body["thread_ts"] == "200.1"
    assert ephemeral.body["text"].startswith(f"Recorded: slack:U42 is on case {case_id}.")
    [toast] = peer.wait_for("answerCallbackQuery")
    assert toast.body["text"].startswith(f"Recorded: telegram:777 is on case {case_id}.")
    # Slack's retry of the typed message records nothing more, and tells nobody again
    again = api.post("/v1/inbound/slack", content=body, headers=headers)
    assert again.json()["outcome"] == "duplicate"
    assert len(service.events(case_id, "acknowledged")) == 2
    wrong = "0" * 10 if code != "0" * 10 else "1" * 10
    typo = json.dumps({**event, "event": {**event["event"], "text": f"{wrong} approve"}})
    for retry in ("", "1"):  # Slack's first delivery, then its retry of the 404
        stamp = str(int(time.time()))
        signed = {**headers, "X-Slack-Signature": sign(SLACK_SECRET, stamp, typo.encode())}
        signed["X-Slack-Request-Timestamp"] = stamp
        if retry:
            signed["X-Slack-Retry-Num"] = retry
        assert api.post("/v1/inbound/slack", content=typo, headers=signed).status_code == 404
    told = [c.body["text"] for c in peer.of("chat.postEphemeral")]
    assert told.count("unknown or expired code") == 1
    # and an ack whose reason holds a secret is withheld like any reply, never stored
    leaked = api.post(
        "/v1/inbound/ntfy", content=f"{code} on it, key AKIAIOSFODNN7EXAMPLE".encode()
    )
    assert leaked.json()["outcome"] == "withheld"
    assert len(service.events(case_id, "acknowledged")) == 2
    assert "AKIAIOSFODNN7EXAMPLE" not in str([e.detail for e in service.events(case_id)])
    # an ntfy Ack is recorded as unverified: ntfy cannot say who pressed it
    assert api.post("/v1/inbound/ntfy", content=f"{code} ack".encode()).status_code == 200
    assert service.events(case_id, "acknowledged")[-1].detail["verified"] is False


def test_a_typed_telegram_reply_is_answered_in_a_reply_and_a_typo_is_said_back(
    service: Harness, peer: Platforms, api: TestClient
) -> None:
    # Given a paged case
    case_id, code = paged(service, peer, "esc-btn-typed")
    headers = {"X-Telegram-Bot-Api-Secret-Token": TELEGRAM_SECRET}

    def typed(update_id: int, text: str) -> Any:
        message = {
            "message_id": update_id,
            "from": {"id": 31, "is_bot": False},
            "chat": {"id": 4242},
            "date": 0,
            "text": text,
        }
        update = {"update_id": update_id, "message": message}
        return api.post("/v1/inbound/telegram", json=update, headers=headers)

    # When the operator mistypes the code, then types it right
    wrong = "0" * 10 if code != "0" * 10 else "1" * 10
    # (Telegram sends an update again on any status but 2xx: every update is answered 200)
    mistyped = typed(61, f"{wrong} approve")
    assert mistyped.status_code == 200 and mistyped.json() == {"detail": "unknown or expired code"}
    assert typed(62, f"{code} approve").json()["outcome"] == "decided"

    # Then each message gets a reply in the chat it came from
    # (found by the message each answers: a page's own threaded sends may come between)
    def answers(calls: list[Any]) -> dict[int, Any]:
        bodies = [c.body or {} for c in calls]
        return {b["reply_parameters"]["message_id"]: b for b in bodies if "reply_parameters" in b}

    replies = answers(peer.wait(lambda calls: {61, 62} <= set(answers(calls))))
    typo, decided = replies[61], replies[62]
    assert typo["chat_id"] == 4242 and typo["text"] == "unknown or expired code"
    assert decided["chat_id"] == 4242
    assert decided["text"] == f"Decided: approve. (case {case_id})"
    assert service.decisions(case_id)[0].decided_by == "telegram:31"


def test_a_slack_webhook_url_stays_with_apprise() -> None:
    import apprise

    from workers import native_pages, slack_api
    from workers.channels import Channel

    found = apprise.Apprise()
    found.add("slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7/#ops")
    found.add(f"slack://{SLACK_BOT}/C0TEST")
    webhook, bot = list(found)
    assert slack_api.bot_of(webhook) is None
    assert not native_pages.is_native(Channel("ops", "slack://...", webhook))
    assert slack_api.bot_of(bot) == slack_api.SlackBot(SLACK_BOT, ("C0TEST",))


def test_when_nobody_answers_the_default_updates_every_page_in_place(
    service: Harness, peer: Platforms
) -> None:
    # Given a low case (window 1 s, timeout 2 s, default skip) paged to the three platforms
    service.send({**valid_packet(), "packet_id": "esc-btn-default", "severity": "low"})
    case = service.case("run-8842", "esc-btn-default")
    # When nobody answers, the follow-up and then the default come
    closed = service.in_state(case.id, "closed", timeout=20)
    assert closed.outcome == "defaulted"
    # Then every Slack and Telegram page sent (the first and the follow-up) is updated
    pages = peer.of("chat.postMessage")
    asked = [p for p in pages if "blocks" in p.body and len(p.body["blocks"]) == 2]
    updates = peer.wait_for("chat.update", len(asked))
    assert {u.body["ts"] for u in updates} == {p.answer["ts"] for p in asked}
    assert all("the default skip applied" in u.body["text"] for u in updates)
    sent = [c for c in peer.of("sendMessage") if "inline_keyboard" in str(c.body)]
    edits = peer.wait_for("editMessageText", len(sent))
    assert {e.body["message_id"] for e in edits} == {c.answer["result"]["message_id"] for c in sent}
    assert all(e.body["reply_markup"] == {"inline_keyboard": []} for e in edits)
    # and ntfy's notice carries the page's sequence id, so it replaces it
    notice = peer.wait(
        lambda calls: any(
            "default skip" in str(c.body.get("message")) for c in calls if c.path == "/"
        )
    )
    [replaced] = [c for c in notice if c.path == "/" and "default skip" in str(c.body["message"])]
    assert replaced.body["sequence_id"] == f"escalate-{case.id}" and "actions" not in replaced.body
    if target := os.environ.get("ESCALATE_CHANNELS_DOC"):
        capture_ending(Path(target), updates[0], edits[0], replaced)


def test_a_button_pressed_under_long_polling_is_answered_too(
    service: Harness, peer: Platforms
) -> None:
    from workers.inbound.dispatch import MissLimiter, poll_telegram_once
    from workers.inbound.telegram import TelegramPoller
    from workers.runtime import runtime_for

    # Given a paged case and, waiting at Telegram, a press of its "approve" button
    case_id, code = paged(service, peer, "esc-btn-poll")
    peer.updates.append(
        {
            "update_id": 500,
            "callback_query": {
                "id": "cbq-poll",
                "from": {"id": 808, "is_bot": False},
                "message": {"message_id": 100, "chat": {"id": 4242}},
                "data": f"{code} approve",
            },
        }
    )
    # When `escalate telegram-poll` fetches it (getUpdates at the configured API base)
    runtime = runtime_for(service.app)
    with TelegramPoller(TELEGRAM_BOT, api_url=peer.url, timeout=0) as poller:
        [result] = poll_telegram_once(runtime, poller, MissLimiter())
    # Then it decides, and the press is answered where it was made
    assert not isinstance(result, Exception) and result.outcome == "decided"
    assert service.decisions(case_id)[0].decided_by == "telegram:808"
    [answered] = peer.wait_for("answerCallbackQuery")
    assert answered.body["callback_query_id"] == "cbq-poll"
    assert answered.body["text"] == f"Decided: approve. (case {case_id})"
