"""Which buttons a page carries and their platform shapes: pure, table-driven."""

from __future__ import annotations

import pytest

from workflows.buttons import (
    Press,
    answer_buttons,
    ntfy_actions,
    slack_message,
    telegram_keyboard,
)
from workflows.case import Option

CODE = "K7Q2MX9D4P"
LINKS = {
    "wipe": "https://e.example/a/wipe",
    "approve": "https://e.example/a/approve",
    "stop": "https://e.example/a/stop",
    "hold": "https://e.example/a/hold",
}


def options(*labels: str) -> list[Option]:
    return [Option(label, label) for label in labels]


def test_safe_options_come_first_so_a_safe_stop_keeps_its_button_within_three() -> None:
    # Given a destructive option listed first and three safe ones, on ntfy's three buttons
    buttons = answer_buttons(
        options("wipe", "approve", "hold", "stop"), frozenset({"wipe"}), ack=True, limit=3
    )
    # Then the three safe options answer, and there is no room left for wipe or Ack
    assert [(b.option, b.press) for b in buttons] == [
        ("approve", Press.ANSWER),
        ("hold", Press.ANSWER),
        ("stop", Press.ANSWER),
    ]


def test_a_destructive_option_opens_its_confirm_page_and_ack_comes_last() -> None:
    buttons = answer_buttons(options("wipe", "stop"), frozenset({"wipe"}), ack=True, limit=24)
    assert [b.press for b in buttons] == [Press.ANSWER, Press.CONFIRM, Press.ACK]
    actions = ntfy_actions(buttons, token=CODE, inbound_url="https://e.example/in", links=LINKS)
    assert actions == [
        {
            "action": "http",
            "label": "stop",
            "url": "https://e.example/in",
            "method": "POST",
            "body": f"{CODE} stop",
            "clear": True,
        },
        {"action": "view", "label": "wipe", "url": LINKS["wipe"]},
        {
            "action": "http",
            "label": "Ack: I'm on it",
            "url": "https://e.example/in",
            "method": "POST",
            "body": f"{CODE} ack",
            "clear": True,
        },
    ]


@pytest.mark.parametrize(
    ("label", "answers_in_place"),
    [("approve", True), ("x" * 53, True), ("x" * 54, False), ("é" * 27, False)],
)
def test_telegram_callback_data_stays_within_64_bytes(label: str, answers_in_place: bool) -> None:
    # "<10-char code> <label>" is 11 bytes plus the label's UTF-8 bytes
    LINKS[label] = "https://e.example/a/long"
    buttons = answer_buttons(options(label), frozenset(), ack=False, limit=24)
    keyboard = telegram_keyboard(buttons, token=CODE, links=LINKS, case_url="https://e.example/c")
    first = keyboard["inline_keyboard"][0][0]
    if answers_in_place:
        assert first["callback_data"] == f"{CODE} {label}"
    else:  # too long to come back in place: its answer link, which asks before deciding
        assert first == {"text": first["text"], "url": "https://e.example/a/long"}
    assert keyboard["inline_keyboard"][-1] == [
        {"text": "Open the case", "url": "https://e.example/c"}
    ]


def test_slack_text_stays_plain_text_and_buttons_carry_value_and_action_id() -> None:
    buttons = answer_buttons(options("approve", "wipe"), frozenset({"wipe"}), ack=True, limit=24)
    message = slack_message(
        "[escalate] Decision needed",
        "Q: <b>*bold*</b>",
        buttons,
        token=CODE,
        links=LINKS,
        case_url="https://e.example/c",
    )
    section, actions = message["blocks"]
    assert section["text"] == {
        "type": "plain_text",
        "text": "[escalate] Decision needed\nQ: <b>*bold*</b>",
        "emoji": False,
    }
    # the fallback text is escaped and unparsed, so "<https://x|click>" cannot become a link
    assert message["text"] == "[escalate] Decision needed\nQ: &lt;b&gt;*bold*&lt;/b&gt;"
    assert message["mrkdwn"] is False
    elements = actions["elements"]
    assert len({e["action_id"] for e in elements}) == len(elements) == 4
    assert elements[0]["value"] == f"{CODE} approve" and elements[0]["style"] == "primary"
    assert elements[1]["url"] == LINKS["wipe"] and "value" not in elements[1]
    assert elements[2]["value"] == f"{CODE} ack"
    assert all(len(e["text"]["text"]) <= 75 for e in elements)


def test_with_no_way_back_every_option_opens_its_answer_link() -> None:
    # Given a platform whose inbound path is not configured (no signing secret, no webhook)
    buttons = answer_buttons(
        options("approve", "wipe"), frozenset({"wipe"}), ack=True, limit=24, answers_back=False
    )
    # Then no button answers in place (a press would be lost) and there is no Ack
    assert [(b.option, b.press) for b in buttons] == [
        ("approve", Press.CONFIRM),
        ("wipe", Press.CONFIRM),
    ]
    keyboard = telegram_keyboard(buttons, token=CODE, links=LINKS, case_url="https://e.example/c")
    assert all("callback_data" not in key for row in keyboard["inline_keyboard"] for key in row)
