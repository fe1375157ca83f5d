"""Answering a real notification from where it arrived (issue 4): reply code and links."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from api.app import create_app
from tests.workers.conftest import Harness
from workers.answering import normalise_token, reply_token, token_hash
from workers.runtime import runtime_for
from workflows.examples import valid_packet

OPERATOR = {"Authorization": "Bearer op-token"}


def notified(
    service: Harness,
    packet_id: str,
    *,
    changes: dict[str, Any] | None = None,
    path: str = "/ops",
    **parts: Any,
) -> tuple[str, str]:
    """Raise a case, wait for its notification at `path`; return (case id, its text)."""
    service.send({**valid_packet(), "packet_id": packet_id, **(changes or {})}, **parts)
    case = service.case("run-8842", packet_id)
    service.sink.wait_for(
        lambda got: any(r.path == path and packet_id in r.body["message"] for r in got)
    )
    message = next(
        r.body["message"] for r in service.sink.posts(path) if packet_id in r.body["message"]
    )
    service.in_state(case.id, "awaiting", "followed_up")
    return case.id, message


def code_in(message: str) -> str:
    found = re.search(r" · code ([0-9A-Z]{10})$", message, flags=re.M)
    assert found, message
    return found.group(1)


def links_in(message: str) -> dict[str, str]:
    """Each option's link, on the line below the option ("- label — description")."""
    return dict(re.findall(r"^- (\S+)(?: — .*)?\n  (http\S+/a/\S+)$", message, flags=re.M))


def test_the_code_in_the_notification_routes_a_chat_reply(
    service: Harness, api: TestClient
) -> None:
    case_id, message = notified(service, "esc-ans-1")
    code = code_in(message)
    # The notification carries the live code; the database keeps only its hash
    assert code == reply_token(runtime_for(service.app).answer_key, case_id)
    with service.engine.connect() as db:
        dump = str(db.execute(text("SELECT * FROM escalations")).all())
        dump += str(db.execute(text("SELECT * FROM deliveries")).all())
    key = runtime_for(service.app).answer_key
    assert code not in dump and token_hash(key, code) in dump
    # When the operator replies on the chat, code first, lower case and all
    reply = api.post(
        "/v1/inbound/text",
        headers=OPERATOR,
        json={"text": f"{code.lower()} approve, go ahead", "channel": "slack", "sender": "U123"},
    )
    # Then it decides, says what it understood, and the run wakes with it
    assert reply.status_code == 200, reply.json()
    assert reply.json()["understood"] == "approve"
    closed = service.in_state(case_id, "closed")
    assert closed.outcome == "decided"
    [decision] = service.decisions(case_id)
    # A bridge names the platform, but cannot pose as a platform identity we verify ourselves
    assert decision.decided_by == "bridge:slack:U123" and decision.channel == "bridge:slack"
    # And a later reply with the same code is told it was already decided
    late = api.post(
        "/v1/inbound/text",
        headers=OPERATOR,
        json={"text": f"{code} deny", "channel": "slack", "sender": "U999"},
    )
    assert late.status_code == 409 and "Already decided: approve" in late.json()["message"]


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"text": "ZZZZZZZZZZ approve", "channel": "c", "sender": "s"}, 404),
        ({"text": "approve", "channel": "c", "sender": "s"}, 200),  # chatter: ignored
        ({"text": "", "channel": "c", "sender": "s"}, 422),
        ({"channel": "c", "sender": "s"}, 422),
    ],
)
def test_unknown_codes_and_empty_text_are_refused(
    service: Harness, api: TestClient, body: dict[str, Any], status: int
) -> None:
    response = api.post("/v1/inbound/text", headers=OPERATOR, json=body)
    assert response.status_code == status


def test_a_reply_that_decides_nothing_is_recorded_and_answered(
    service: Harness, api: TestClient
) -> None:
    case_id, message = notified(service, "esc-ans-2")
    code = code_in(message)
    reply = api.post(
        "/v1/inbound/text",
        headers=OPERATOR,
        json={"text": f"{code} what does deny do?", "channel": "tg", "sender": "7"},
    )
    assert reply.status_code == 200 and reply.json()["outcome"] == "comment"
    assert "approve, deny" in reply.json()["message"]
    assert service.decisions(case_id) == []


def test_guessing_codes_is_throttled_per_sender(service: Harness, api: TestClient) -> None:
    for attempt in range(10):
        miss = api.post(
            "/v1/inbound/text",
            headers=OPERATOR,
            json={"text": f"ABCDEFGH{attempt:02d} approve", "channel": "c", "sender": "guesser"},
        )
        assert miss.status_code == 404
    blocked = api.post(
        "/v1/inbound/text",
        headers=OPERATOR,
        json={"text": "ABCDEFGH99 approve", "channel": "c", "sender": "guesser"},
    )
    assert blocked.status_code == 429


def test_a_link_asks_on_get_and_decides_once_on_post(service: Harness, api: TestClient) -> None:
    case_id, message = notified(service, "esc-ans-3")
    links = links_in(message)
    assert set(links) == {"approve", "deny"}
    path = "/a/" + links["deny"].split("/a/", 1)[1]
    # A GET (a link previewer, a mail scanner) only shows a confirm page
    for _ in range(2):
        page = api.get(path)
        assert page.status_code == 200 and '<form method="post">' in page.text
    assert service.decisions(case_id) == []
    # The POST decides
    done = api.post(path)
    assert done.status_code == 200 and "Decided: deny" in done.text
    closed = service.in_state(case_id, "closed")
    assert closed.outcome == "decided"
    [decision] = service.decisions(case_id)
    assert decision.channel == "link" and decision.decided_by == "link via ops"
    # A reused link decides nothing
    again = api.post(path)
    assert again.status_code == 409 and "Already decided" in again.text


def test_an_altered_or_expired_link_is_refused(service: Harness, api: TestClient) -> None:
    case_id, message = notified(service, "esc-ans-4")
    path = "/a/" + links_in(message)["approve"].split("/a/", 1)[1]
    altered = path[:-3] + ("AAA" if not path.endswith("AAA") else "BBB")
    assert api.post(altered).status_code == 410
    settings = service.settings.model_copy(
        update={"api_tokens": "operator:op-token", "link_max_age": 0.000001}
    )
    with TestClient(create_app(settings)) as strict:
        import time

        time.sleep(1.1)  # itsdangerous ages links in whole seconds
        assert strict.post(path).status_code == 410
    assert service.decisions(case_id) == []


def test_fifty_simultaneous_replies_make_one_decision(service: Harness, api: TestClient) -> None:
    case_id, message = notified(service, "esc-ans-5")
    code = code_in(message)
    statuses: list[int] = []
    start = threading.Barrier(50)

    def reply(index: int) -> None:
        start.wait()
        option = "approve" if index % 2 else "deny"
        response = api.post(
            "/v1/inbound/text",
            headers=OPERATOR,
            json={"text": f"{code} {option}", "channel": "c", "sender": f"s{index}"},
        )
        statuses.append(response.status_code)

    threads = [threading.Thread(target=reply, args=(i,)) for i in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(statuses).count(200) == 1 and statuses.count(409) == 49
    assert len(service.decisions(case_id)) == 1


def test_typed_codes_forgive_case_dashes_and_lookalikes() -> None:
    assert normalise_token("k7q2-mx9d-4p") == "K7Q2MX9D4P"
    assert normalise_token("K7Q2MX9D4P".replace("0", "O")) == "K7Q2MX9D4P"
    assert normalise_token("1O1O1") == "10101"


# --- Native channels: the same path behind each platform's own authentication -------------

SLACK_SECRET, TELEGRAM_SECRET = "slack-signing-secret", "telegram-webhook-secret"


@pytest.fixture
def platform_api(service: Harness) -> Iterator[TestClient]:
    settings = service.settings.model_copy(
        update={
            "api_tokens": "operator:op-token",
            "slack_signing_secret": SLACK_SECRET,
            "telegram_secret": TELEGRAM_SECRET,
        }
    )
    with TestClient(create_app(settings)) as client:
        yield client


def slack_post(api: TestClient, body: bytes, *, age: float = 0, secret: str = SLACK_SECRET) -> Any:
    import time

    from workers.inbound.slack import sign

    stamp = str(int(time.time() - age))
    return api.post(
        "/v1/inbound/slack",
        content=body,
        headers={
            "Content-Type": "application/json",
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": sign(secret, stamp, body),
        },
    )


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_slack_reply_decides_once_even_when_slack_retries(
    service: Harness, platform_api: TestClient
) -> None:
    import json

    case_id, message = notified(service, "esc-slack-1")
    event = {
        "type": "event_callback",
        "event": {
            "type": "message",
            "user": "U42",
            "client_msg_id": "m-1",
            "channel": "C1",
            "ts": "1.0",
            "text": f"{code_in(message)} approve",
        },
    }
    body = json.dumps(event).encode()
    # A forged or replayed request is refused before anything is read
    assert slack_post(platform_api, body, secret="wrong").status_code == 401
    assert slack_post(platform_api, body, age=600).status_code == 401
    # A body changed after signing (one byte) is refused too
    flipped = body.replace(b"approve", b"apprOve")
    import time

    from workers.inbound.slack import sign

    stamp = str(int(time.time()))
    tampered = platform_api.post(
        "/v1/inbound/slack",
        content=flipped,
        headers={
            "Content-Type": "application/json",
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": sign(SLACK_SECRET, stamp, body),
        },
    )
    assert tampered.status_code == 401
    # The genuine one decides; Slack's retry of the same message changes nothing
    first = slack_post(platform_api, body)
    assert first.status_code == 200 and first.json()["outcome"] == "decided"
    again = slack_post(platform_api, body)
    assert again.status_code == 200 and again.json()["outcome"] == "duplicate"
    [decision] = service.decisions(case_id)
    assert decision.decided_by == "slack:U42"
    with service.engine.connect() as db:
        rows = db.execute(
            text(
                "SELECT platform_message_id, grammar_version, token_id FROM replies "
                "WHERE escalation_id = :id"
            ),
            {"id": case_id},
        ).all()
    assert len(rows) == 1 and rows[0][0] == "m-1" and rows[0][1] and rows[0][2]


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_chatter_is_ignored_with_a_2xx_and_never_counts_as_a_guess(
    service: Harness, platform_api: TestClient
) -> None:
    import json

    case_id, message = notified(service, "esc-chatter-1")

    def said(text: str, index: int) -> Any:
        event = {
            "type": "event_callback",
            "event": {
                "type": "message",
                "user": "U7",
                "client_msg_id": f"chat-{index}",
                "channel": "C1",
                "ts": f"{index}.0",
                "text": text,
            },
        }
        return slack_post(platform_api, json.dumps(event).encode())

    # Given a busy channel: twenty lines of ordinary chat in a minute, on Slack and a bridge
    for index in range(20):
        chat = said(f"lunch at {index}? approve of the new room", index)
        assert chat.status_code == 200 and "ignored" in chat.json(), chat.json()
        bridged = platform_api.post(
            "/v1/inbound/text",
            headers=OPERATOR,
            json={"text": "sounds good", "channel": "mm", "sender": "U7"},
        )
        assert bridged.status_code == 200 and "ignored" in bridged.json()
    # When the same person then answers with the code / Then it decides: no 429
    answer = said(f"{code_in(message)} approve", 99)
    assert answer.status_code == 200 and answer.json()["outcome"] == "decided", answer.json()
    assert service.decisions(case_id)[0].decided_by == "slack:U7"


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_telegram_reply_needs_the_secret_and_counts_once(
    service: Harness, platform_api: TestClient
) -> None:
    case_id, message = notified(service, "esc-tg-1")
    update = {
        "update_id": 777,
        "message": {
            "message_id": 5,
            "from": {"id": 4242, "is_bot": False},
            "chat": {"id": 1},
            "date": 0,
            "text": f"{code_in(message)} deny",
        },
    }
    assert platform_api.post("/v1/inbound/telegram", json=update).status_code == 401
    headers = {"X-Telegram-Bot-Api-Secret-Token": TELEGRAM_SECRET}
    first = platform_api.post("/v1/inbound/telegram", json=update, headers=headers)
    assert first.status_code == 200 and first.json()["understood"] == "deny"
    replayed = platform_api.post("/v1/inbound/telegram", json=update, headers=headers)
    assert replayed.json()["outcome"] == "duplicate"
    assert service.in_state(case_id, "closed").outcome == "decided"


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_an_ntfy_button_press_decides(service: Harness, platform_api: TestClient) -> None:
    case_id, message = notified(service, "esc-ntfy-1")
    pressed = platform_api.post("/v1/inbound/ntfy", content=f"{code_in(message)} approve".encode())
    assert pressed.status_code == 200 and pressed.json()["outcome"] == "decided"
    assert service.decisions(case_id)[0].channel == "ntfy"


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_the_runs_owner_may_not_approve_its_own_harm_risk_case(
    service: Harness, platform_api: TestClient
) -> None:
    import json

    # Given a harm_risk case raised by a run whose owner is Slack user U1
    case_id, message = notified(
        service, "esc-owner-1", changes={"trigger_type": "harm_risk"}, owner="slack:U1"
    )
    code = code_in(message)

    def from_slack(user: str, words: str, msg: str) -> Any:
        event = {
            "type": "event_callback",
            "event": {
                "type": "message",
                "user": user,
                "client_msg_id": msg,
                "channel": "C1",
                "ts": "1.0",
                "text": f"{code} {words}",
            },
        }
        return slack_post(platform_api, json.dumps(event).encode())

    # When the owner approves, it is refused and recorded; nothing is decided
    refused = from_slack("U1", "approve", "o-1")
    assert refused.status_code == 403 and "owner may not approve" in refused.json()["message"]
    assert service.decisions(case_id) == []
    # Then another decider's approval decides
    accepted = from_slack("U2", "approve", "o-2")
    assert accepted.status_code == 200 and accepted.json()["outcome"] == "decided"


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_destructive_option_takes_an_explicit_confirm(service: Harness, api: TestClient) -> None:
    case_id, message = notified(
        service,
        "esc-confirm-1",
        options=[{"label": "wipe", "description": "drop the table", "destructive": True}, "keep"],
    )
    code = code_in(message)

    def say(words: str) -> Any:
        return api.post(
            "/v1/inbound/text",
            headers=OPERATOR,
            json={"text": f"{code} {words}", "channel": "c", "sender": "ana"},
        )

    first = say("wipe")
    assert first.status_code == 200 and first.json()["outcome"] == "needs_confirmation"
    # the hint is the whole reply to send, code included
    assert f'reply "{code} CONFIRM wipe"' in first.json()["message"]
    assert service.decisions(case_id) == []
    confirmed = say("CONFIRM wipe")
    assert confirmed.status_code == 200 and confirmed.json()["outcome"] == "decided"
    assert service.decisions(case_id)[0].option == "wipe"


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_destructive_link_shows_its_consequence_and_takes_a_second_confirmation(
    service: Harness, api: TestClient
) -> None:
    import httpx

    # Given a case whose `wipe` is destructive, and its one-click link
    case_id, message = notified(
        service,
        "esc-confirm-link",
        options=[{"label": "wipe", "description": "drop the table", "destructive": True}, "keep"],
    )
    path = httpx.URL(links_in(message)["wipe"]).path
    # When it is opened, the page warns and says what it does
    opened = api.get(path)
    assert opened.status_code == 200
    assert "cannot be undone" in opened.text and "drop the table" in opened.text
    # And pressing its button does not decide: a second page asks once more
    first = api.post(path)
    assert first.status_code == 200 and "This cannot be undone" in first.text
    assert 'name="confirmed" value="wipe"' in first.text
    assert service.decisions(case_id) == []
    # Then only the second confirmation decides
    second = api.post(path, data={"confirmed": "wipe"})
    assert second.status_code == 200 and "Decided: wipe." in second.text, second.text
    assert service.decisions(case_id)[0].option == "wipe"


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_telegram_long_polling_answers_and_never_counts_an_update_twice(
    service: Harness,
) -> None:
    import httpx

    from workers.inbound.dispatch import MissLimiter, poll_telegram_once
    from workers.inbound.telegram import TelegramPoller

    case_id, message = notified(service, "esc-poll-1")
    update = {
        "update_id": 31,
        "message": {
            "message_id": 1,
            "from": {"id": 99, "is_bot": False},
            "chat": {"id": 1},
            "date": 0,
            "text": f"{code_in(message)} approve",
        },
    }

    # Telegram's servers are out of reach here: a real httpx client with a scripted
    # transport plays them, sending the same update twice (as after a poller restart).
    def telegram(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"ok": True, "result": [update]})

    runtime = runtime_for(service.app)
    limiter = MissLimiter()
    for _ in range(2):  # two pollers, as if the process restarted before the offset stuck
        client = httpx.Client(transport=httpx.MockTransport(telegram))
        with TelegramPoller("123:abc", client=client) as poller:
            [result] = poll_telegram_once(runtime, poller, limiter)
    assert not isinstance(result, Exception) and result.outcome == "duplicate"
    [decision] = service.decisions(case_id)
    assert decision.decided_by == "telegram:99"


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_stopping_a_critical_case_takes_a_confirm(service: Harness, api: TestClient) -> None:
    case_id, message = notified(
        service,
        "esc-crit-1",
        changes={"severity": "critical", "waiting_behavior": "paused"},
        path="/pager",
    )
    code = code_in(message)
    ask = api.post(
        "/v1/inbound/text",
        headers=OPERATOR,
        json={"text": f"{code} deny", "channel": "c", "sender": "ana"},
    )
    assert ask.json()["outcome"] == "needs_confirmation"
    done = api.post(
        "/v1/inbound/text",
        headers=OPERATOR,
        json={"text": f"{code} confirm deny", "channel": "c", "sender": "ana"},
    )
    assert done.json()["outcome"] == "decided"
    assert service.in_state(case_id, "closed").outcome == "decided"
