"""Each channel class gets its own form, read back from real local peers: an SMTP server,
Mosquitto, and HTTP sinks taking Mattermost's and ntfy's documented requests."""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from models.settings import Settings
from tests.support.peers import Mailbox, Subscriber, mqtt_subscriber, smtp_server
from tests.support.sink import HttpSink
from tests.support.waiting import wait_until
from tests.workers.conftest import TAGS, Harness, patient_design
from workflows.examples import valid_packet

MARKUP = "Skip <customer_ref> rows? <a href='https://evil.example/x'>click</a>"


@pytest.fixture
def backend() -> dict[str, Any]:
    return {}  # the forms do not depend on the broker or database: SQLite only


@pytest.fixture
def mailbox() -> Iterator[tuple[Mailbox, int]]:
    with smtp_server() as served:
        yield served


@pytest.fixture
def topic() -> str:
    return f"escalate/test-{secrets.token_hex(4)}"


@pytest.fixture
def subscriber(topic: str) -> Iterator[Subscriber]:
    with mqtt_subscriber(topic) as subscribed:
        yield subscribed


@pytest.fixture
def settings(
    tmp_path: Path, sink: HttpSink, mailbox: tuple[Mailbox, int], topic: str, subscriber: Any
) -> Settings:
    """`ops` reaches one channel of each class; the other tags post JSON to the sink."""
    host = sink.url.removeprefix("http://")
    mail = (
        f"mailto://127.0.0.1:{mailbox[1]}?mode=insecure&from=escalate@example.com"
        "&to=ops@example.com"
    )
    urls = [
        mail,
        f"mmost://{host}/mmtoken",
        f"mmost://{host}/mmothern",  # masks as m...n too: two channels all the same
        f"ntfy://{host}/escalate",
        f"mqtt://127.0.0.1:1883/{topic}",
    ]
    lines = ["urls:"] + [f"  - {url}:\n      tag: ops" for url in urls]
    lines += [f"  - json://{host}/{tag}:\n      tag: {tag}" for tag in TAGS if tag != "ops"]
    config = tmp_path / "apprise.yaml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Settings(
        home=tmp_path / "home",
        # windows of minutes: under load the test design's 2 s default closed the case
        # before the answer came (outcome "superseded")
        design=patient_design(tmp_path),
        apprise_config=config,
        queue=f"test-{secrets.token_hex(4)}",
        sweep_interval=0.25,
        delivery_tries=1,
        delivery_backoff=0.05,
        send_timeout=3.0,
        public_url="https://escalate.example",
    )


def test_each_channel_class_reads_its_own_form(
    service: Harness, mailbox: tuple[Mailbox, int], subscriber: Subscriber
) -> None:
    # Given a medium case whose packet text holds markup
    packet = {**valid_packet(), "packet_id": "esc-forms-1", "requested_action": MARKUP}
    service.send(packet, options=["skip", "placeholder"])
    case = service.case("run-8842", "esc-forms-1")
    # When its first page reaches every channel of `ops`
    [mail] = mailbox[0].wait()
    service.sink.wait_for(
        lambda got: {"/hooks/mmtoken", "/hooks/mmothern", "/"} <= {r.path for r in got}
    )
    [mqtt] = subscriber.wait()
    # Then the mail's subject says what is needed, with severity, question and code
    code = re.search(r" · ([0-9A-Z]{10})$", str(mail["Subject"]))
    assert code, mail["Subject"]
    assert str(mail["Subject"]).startswith(
        "[escalate] Decision needed (medium): Skip <customer_ref>"
    )
    # its text part keeps its lines and its HTML part keeps packet text as text
    text = mail.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    html = mail.get_body(("html",)).get_content()  # type: ignore[union-attr]
    lines = text.splitlines()
    assert f"Question: {MARKUP}" in lines
    assert "Options:" in lines and "- skip" in lines
    assert "&lt;customer_ref&gt;" in html and "evil.example/x'>" not in html
    assert html.count("<a href=") == 2  # the two answer links, nothing of the agent's
    assert "reply here" not in text and "reply on this channel" not in text
    assert case.id in text and code.group(1) in text
    # the chat (Mattermost) and push (ntfy, MQTT) forms are short, with the code and one link
    chat = service.sink.posts("/hooks/mmtoken")[0].body["text"]
    ntfy = service.sink.posts("/")[0]
    push = json.loads(mqtt) if mqtt.startswith(b"{") else mqtt.decode()
    for body, answer in (
        (chat, f"Answer: reply here with the code, then your choice: {code.group(1)} <choice>"),
        (
            ntfy.body["message"],
            f"Answer: tap a button, or open the case below (code {code.group(1)})",
        ),
        (str(push), f"Answer: open the case below (code {code.group(1)})"),
    ):
        assert answer in body, body
        assert len(body) <= 1000
        assert body.count("https://escalate.example") == 1
    assert ntfy.body["title"] == f"[escalate] Decision needed (medium) · {code.group(1)}"
    if target := os.environ.get("ESCALATE_CHANNELS_DOC"):  # docs/CHANNELS.md, from real peers
        capture(Path(target), mail, text, html, chat, ntfy.body, str(push))
    # and each configured channel has its own outbox row, in its own form
    rows = [
        d
        for d in service.deliveries(case.id)
        if d.payload.get("tag") == "ops" and d.purpose == "notify"
    ]
    readings = sorted(str(d.payload.get("reading")) for d in rows)
    assert readings == ["buttons", "chat", "chat", "mail", "push"]
    hooks = [d.target for d in rows if d.target.startswith("mmost://")]
    assert len(set(hooks)) == 2 and len({hook.split(" #")[0] for hook in hooks}) == 1
    assert not any("mmtoken" in d.target or "mmothern" in d.target for d in rows)


def test_every_channel_that_was_paged_learns_the_outcome(
    service: Harness, mailbox: tuple[Mailbox, int], subscriber: Subscriber
) -> None:
    from fastapi.testclient import TestClient

    from api.app import create_app

    # Given a case paged to every channel of `ops` (and its copy tag)
    service.send({**valid_packet(), "packet_id": "esc-forms-2"})
    case = service.case("run-8842", "esc-forms-2")
    [page] = mailbox[0].wait()
    code = str(page["Subject"]).rsplit(" · ", 1)[1]
    subscriber.wait()  # every page out before the answer (a page still queued is cancelled)
    service.sink.wait_for(lambda got: sum(r.path.startswith("/hooks/") for r in got) >= 2)
    service.sink.wait_for(lambda got: {"/", "/ops-log"} <= {r.path for r in got})
    # When someone answers from a chat bridge
    settings = service.settings.model_copy(update={"api_tokens": "operator:op-token"})
    with TestClient(create_app(settings)) as api:
        reply = api.post(
            "/v1/inbound/text",
            headers={"Authorization": "Bearer op-token"},
            json={"text": f"{code} approve", "channel": "mm", "sender": "ana"},
        )
    assert reply.json()["outcome"] == "decided"
    service.in_state(case.id, "closed")
    # Then every paged channel gets a short notice: who, what, when, nothing more needed
    # (found by subject)
    decided = "[escalate] Decided: approve · run-8842"
    mails = wait_until(
        lambda: list(mailbox[0].messages),
        lambda got: any(str(m["Subject"]) == decided for m in got),
        timeout=20,
        what="the notice mail",
    )
    notice = next(m for m in mails if str(m["Subject"]) == decided)
    text = notice.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert text.splitlines()[0].startswith("Decided: approve by bridge:mm:ana at ")
    assert "Nothing more is needed." in text
    pushed = wait_until(
        lambda: [p.decode() for p in subscriber.payloads],
        lambda got: any("Nothing more is needed" in p for p in got),
        timeout=20,
        what="the MQTT notice",
    )
    assert [p.count("Nothing more is needed") for p in pushed if "Nothing more" in p] == [1]
    service.sink.wait_for(
        lambda got: sum("Decided: approve" in str(r.body) for r in got) >= 4  # 2 mm, ntfy, log
    )
    [ntfy] = [r for r in service.sink.posts("/") if "Decided" in str(r.body)]
    assert "actions" not in ntfy.body  # no answer buttons on a closed case


HAND_WRITTEN = "## Chains, working hours, acknowledgements and failing channels"


def capture(path: Path, mail: Any, text: str, html: str, chat: str, ntfy: Any, push: str) -> None:
    """Write what the peers received, as received, for docs/CHANNELS.md."""
    fence = "```"
    parts = [
        "# What each channel class receives",
        "",
        "Captured from real local peers by `tests/workers/test_channel_forms.py` "
        "(`ESCALATE_CHANNELS_DOC=docs/CHANNELS.md pytest tests/workers/test_channel_forms.py`): "
        "an SMTP server (aiosmtpd), Mattermost- and ntfy-shaped HTTP sinks, and Mosquitto. "
        "The packet's question holds markup on purpose; it stays text everywhere.",
        "",
        "## Mail (mailto://): subject, text/plain part, text/html part",
        "",
        f"Subject: `{mail['Subject']}`",
        "",
        f"{fence}text",
        text.rstrip(),
        fence,
        "",
        f"{fence}html",
        html.rstrip(),
        fence,
        "",
        "## Chat (slack:// webhooks, mmost://): a reply on the channel answers",
        "",
        f"{fence}text",
        chat.rstrip(),
        fence,
        "",
        "## Push with buttons (ntfy://): the JSON ntfy received",
        "",
        f"{fence}json",
        json.dumps(ntfy, indent=2, ensure_ascii=False),
        fence,
        "",
        "## Push (mqtt:// and other schemes with no way back): the MQTT payload",
        "",
        f"{fence}text",
        push.rstrip(),
        fence,
        "",
    ]
    # Kept as they are: the hand-written part after the captures, and the button-carrying
    # pages tests/workers/test_buttons.py writes after its marker.
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    starts = [old.find(mark) for mark in (HAND_WRITTEN, BUTTONS_MARKER) if mark in old]
    tail = old[min(starts) :] if starts else ""
    path.write_text("\n".join(parts) + tail, encoding="utf-8")


BUTTONS_MARKER = "<!-- answer buttons: tests/workers/test_buttons.py -->"
